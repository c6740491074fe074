CREATE TABLE `audit_events` (
	`seq` integer PRIMARY KEY NOT NULL,
	`at` text NOT NULL,
	`actor_type` text NOT NULL,
	`actor_id` text,
	`action` text NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text,
	`request_id` text,
	`ip` text,
	`changes` text
);
--> statement-breakpoint
CREATE INDEX `audit_events_target_idx` ON `audit_events` ((seq >> 8),`target_type`,`target_id`,`seq`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`endpoint_id` integer NOT NULL,
	`event_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`lease_until` integer,
	`first_attempt_at` integer,
	`last_attempt_at` integer,
	`delivered_at` integer,
	`response_status` integer,
	`response_body` text,
	`last_error` text,
	`duration_ms` integer,
	`created_at` text NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_endpoint_event_unique` ON `webhook_deliveries` (`endpoint_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_idx` ON `webhook_deliveries` (`endpoint_id`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_pending_idx` ON `webhook_deliveries` (`endpoint_id`,`id`) WHERE status = 'pending';--> statement-breakpoint
CREATE TABLE `webhook_dispatch` (
	`id` integer PRIMARY KEY NOT NULL,
	`position` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`url` text NOT NULL,
	`description` text,
	`events` text NOT NULL,
	`status` text DEFAULT 'enabled' NOT NULL,
	`disabled_reason` text,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_expires_at` text,
	`starts_after` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
