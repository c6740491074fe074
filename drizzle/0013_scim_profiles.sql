CREATE TABLE `user_profiles` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`external_id` text,
	`given_name` text,
	`family_name` text,
	`formatted_name` text,
	`primary_email_type` text,
	`other_emails` text DEFAULT '[]' NOT NULL,
	`employee_number` text,
	`department` text,
	`manager_id` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_profiles_external_id_idx` ON `user_profiles` (`external_id`);