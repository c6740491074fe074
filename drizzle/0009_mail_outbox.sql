CREATE TABLE `account_tokens` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`flow` text NOT NULL,
	`token_hash` text NOT NULL,
	`code_hash` text,
	`email` text NOT NULL,
	`tries` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `account_tokens_token_hash_unique` ON `account_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `account_tokens_user_idx` ON `account_tokens` (`user_id`,`flow`);--> statement-breakpoint
CREATE TABLE `mail_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`message_id` text NOT NULL,
	`flow` text NOT NULL,
	`to_address` text NOT NULL,
	`to_key` text NOT NULL,
	`client_ip` text,
	`subject` text NOT NULL,
	`text_body` text,
	`html_body` text,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` text NOT NULL,
	`sent_at` text,
	`next_attempt_at` integer,
	`lease_until` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mail_outbox_message_id_unique` ON `mail_outbox` (`message_id`);--> statement-breakpoint
CREATE INDEX `mail_outbox_due_idx` ON `mail_outbox` (`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `mail_outbox_to_key_idx` ON `mail_outbox` (`to_key`,`created_at`);--> statement-breakpoint
CREATE INDEX `mail_outbox_client_ip_idx` ON `mail_outbox` (`client_ip`,`created_at`);--> statement-breakpoint
ALTER TABLE `users` ADD `email_verified_at` text;