CREATE TABLE "group_profiles" (
	"group_id" integer PRIMARY KEY NOT NULL,
	"external_id" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "group_profiles" ADD CONSTRAINT "group_profiles_group_id_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "group_profiles_external_id_idx" ON "group_profiles" USING btree ("external_id");