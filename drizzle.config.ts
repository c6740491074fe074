import { defineConfig } from 'drizzle-kit'

// drizzle-kit only generates SQL from src/backends/sqlite/schema.ts; roster applies it with its own migrator
// (src/backends/sqlite/migrate.ts), the same code in dev, tests and the compiled binary.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/backends/sqlite/schema.ts',
  out: './drizzle',
})
