PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_group_profiles` (
	`group_id` integer PRIMARY KEY NOT NULL,
	`external_id` text,
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_group_profiles`("group_id", "external_id") SELECT "group_id", "external_id" FROM `group_profiles`;--> statement-breakpoint
DROP TABLE `group_profiles`;--> statement-breakpoint
ALTER TABLE `__new_group_profiles` RENAME TO `group_profiles`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `group_profiles_external_id_idx` ON `group_profiles` (`external_id`);