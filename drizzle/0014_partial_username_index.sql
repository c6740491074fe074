DROP INDEX `users_username_key_unique`;--> statement-breakpoint
CREATE UNIQUE INDEX `users_username_key_unique` ON `users` (`username_key`) WHERE username_key <> email_key;