-- users.created_at and updated_at were ISO 8601 text (as SQLite keeps them; roster always writes
-- them with "Z"): timestamptz(3) holds the same instants in 8 bytes instead of 25. Edited after
-- drizzle-kit: one ALTER, so the table is rewritten once, with the USING casts text needs.
ALTER TABLE "users"
  ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone USING "created_at"::timestamptz,
  ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone USING "updated_at"::timestamptz;
