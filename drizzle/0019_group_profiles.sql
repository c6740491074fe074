CREATE TABLE `group_profiles` (
	`group_id` integer PRIMARY KEY NOT NULL,
	`external_id` text NOT NULL,
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `group_profiles_external_id_idx` ON `group_profiles` (`external_id`);