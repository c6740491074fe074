ALTER TABLE "login_failures" ADD COLUMN "attempt" text;--> statement-breakpoint
ALTER TABLE "login_failures" ADD COLUMN "lease_until" bigint;--> statement-breakpoint
CREATE INDEX "login_failures_attempt_idx" ON "login_failures" USING btree ("attempt");