ALTER TABLE `webhook_events` ADD `body_sha256` text;--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_body_sha256_unique` ON `webhook_events` (`body_sha256`);