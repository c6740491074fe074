ALTER TABLE `api_keys` ADD `scopes` text DEFAULT '*' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` text;--> statement-breakpoint
ALTER TABLE `users` ADD `role` text DEFAULT 'member' NOT NULL;--> statement-breakpoint
CREATE INDEX `users_admins_idx` ON `users` (`id`) WHERE role = 'admin';