CREATE TABLE "user_profiles" (
	"user_id" integer PRIMARY KEY NOT NULL,
	"external_id" text,
	"given_name" text,
	"family_name" text,
	"formatted_name" text,
	"primary_email_type" text,
	"other_emails" text DEFAULT '[]' NOT NULL,
	"employee_number" text,
	"department" text,
	"manager_id" text
);
--> statement-breakpoint
ALTER TABLE "user_profiles" ADD CONSTRAINT "user_profiles_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "user_profiles_external_id_idx" ON "user_profiles" USING btree ("external_id");