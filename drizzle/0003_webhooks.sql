CREATE TABLE `webhook_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` text NOT NULL,
	`scheme` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`error` text,
	`received_at` text NOT NULL,
	`processed_at` text,
	`next_attempt_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_scheme_event_id_unique` ON `webhook_events` (`scheme`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_events_due_idx` ON `webhook_events` (`next_attempt_at`);