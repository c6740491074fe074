import type { Database } from 'bun:sqlite'
import { DatabaseOpenError } from '../../db/errors'
import { type Migration, refuseNewerDatabase, sha256Hex } from '../../db/migrations'
import { embeddedMigrations } from './migrations.gen'
import { fillSearchKeys, SEARCH_KEY_MIGRATION } from './search-keys'

interface AppliedRow {
  hash: string
  created_at: number
}

/**
 * Applies the embedded drizzle-kit migrations that the database lacks, in one transaction,
 * keeping drizzle's own `__drizzle_migrations` bookkeeping so drizzle tooling agrees.
 * Foreign keys are switched off around the transaction (SQLite ignores the pragma inside one,
 * and a table rebuild with them on cascade-deletes child rows) and checked before commit.
 * Refuses a database that has migrations this binary does not know.
 */
export function runMigrations(
  sqlite: Database,
  migrations: readonly Migration[] = embeddedMigrations,
): { applied: string[] } {
  sqlite.run(
    'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)',
  )
  const applied = sqlite
    .query<AppliedRow, []>(
      'SELECT hash, created_at FROM "__drizzle_migrations" ORDER BY created_at',
    )
    .all()
  refuseNewerDatabase(applied, migrations)
  const lastApplied = applied.at(-1)?.created_at ?? Number.NEGATIVE_INFINITY
  const pending = migrations.filter((migration) => migration.when > Number(lastApplied))
  if (pending.length === 0) return { applied: [] }

  sqlite.run('PRAGMA foreign_keys = OFF')
  try {
    sqlite
      .transaction(() => {
        const record = sqlite.query(
          'INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)',
        )
        for (const migration of pending) {
          for (const statement of migration.sql.split('--> statement-breakpoint')) {
            if (statement.trim() !== '') sqlite.run(statement)
          }
          // What SQL cannot write, in the same transaction as the migration that needs it.
          if (migration.tag === SEARCH_KEY_MIGRATION) fillSearchKeys(sqlite)
          record.run(sha256Hex(migration.sql), migration.when)
        }
        const violations = sqlite.query('PRAGMA foreign_key_check').all()
        if (violations.length > 0) {
          throw new DatabaseOpenError(
            `migration left ${violations.length} foreign key violation(s); nothing was changed`,
          )
        }
      })
      .immediate()
  } finally {
    sqlite.run('PRAGMA foreign_keys = ON')
  }
  return { applied: pending.map((migration) => migration.tag) }
}
