import { defineConfig } from 'drizzle-kit'

// drizzle-kit only generates SQL from src/db/schema.ts; roster applies it with its own migrator
// (src/db/migrate.ts), the same code in dev, tests and the compiled binary.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/db/schema.ts',
  out: './drizzle',
})
