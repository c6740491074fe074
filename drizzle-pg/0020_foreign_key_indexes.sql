CREATE INDEX "auth_challenges_user_idx" ON "auth_challenges" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "uploads_owner_user_idx" ON "uploads" USING btree ("owner_user_id");--> statement-breakpoint
CREATE INDEX "uploads_owner_key_idx" ON "uploads" USING btree ("owner_key_id");