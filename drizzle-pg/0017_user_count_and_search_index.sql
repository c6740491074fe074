-- `q`'s index: trigrams of the folded name and email (users/search-key.ts), for LIKE '%…%'.
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: the database's owner may
-- create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE INDEX "users_search_key_trgm" ON "users" USING gin ("search_key" gin_trgm_ops);
--> statement-breakpoint
-- The number of users without counting the table (CONTRACT section 2). Instances insert at
-- once, so one counter row would make every insert wait for the one before it to commit:
-- instead each statement that inserts or deletes users appends its delta (no row is shared),
-- a read adds the few deltas not yet folded, and housekeeping folds them into user_count.
CREATE TABLE "user_count" ("id" integer PRIMARY KEY CHECK ("id" = 1), "n" bigint NOT NULL);
--> statement-breakpoint
INSERT INTO "user_count" ("id", "n") SELECT 1, count(*) FROM "users";
--> statement-breakpoint
CREATE TABLE "user_count_deltas" ("delta" bigint NOT NULL);
--> statement-breakpoint
CREATE FUNCTION "users_counted_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO user_count_deltas (delta) SELECT count(*) FROM added HAVING count(*) > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "users_counted_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO user_count_deltas (delta) SELECT -count(*) FROM removed HAVING count(*) > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "users_counted_insert" AFTER INSERT ON "users" REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION "users_counted_insert"();
--> statement-breakpoint
CREATE TRIGGER "users_counted_delete" AFTER DELETE ON "users" REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION "users_counted_delete"();
