import { defineConfig } from 'drizzle-kit'

// The PostgreSQL schema's migrations (src/backends/postgres/schema.ts → drizzle-pg/), generated the same way
// as SQLite's (drizzle.config.ts) and applied by roster's own migrator (src/backends/postgres/migrate.ts)
// under an advisory lock, so instances that start together migrate once.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/backends/postgres/schema.ts',
  out: './drizzle-pg',
})
