import type { SQL } from 'bun'
import { DatabaseOpenError } from '../../db/errors'
import { type Migration, refuseNewerDatabase, sha256Hex } from '../../db/migrations'
import { embeddedMigrations } from './migrations.gen'
import { fillSearchKeys, SEARCH_KEY_MIGRATION } from './search-keys'

/** pg_advisory_xact_lock's key for migrations: 'rost' as a 32-bit number. */
const MIGRATION_LOCK = 0x726f7374

/**
 * Applies the embedded PostgreSQL migrations the database lacks, in one transaction that first
 * takes an advisory lock: instances that start together migrate once, the others wait and then
 * find nothing to do. Keeps drizzle's `__drizzle_migrations` bookkeeping, like the SQLite side.
 * Refuses a database that has migrations this binary does not know.
 */
export async function runPgMigrations(
  client: SQL,
  migrations: readonly Migration[] = embeddedMigrations,
): Promise<{ applied: string[] }> {
  try {
    return await client.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await tx`CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`
      const applied: { hash: string; created_at: string }[] =
        await tx`SELECT hash, created_at FROM "__drizzle_migrations" ORDER BY created_at`
      refuseNewerDatabase(applied, migrations)
      const lastApplied = Number(applied.at(-1)?.created_at ?? Number.NEGATIVE_INFINITY)
      const pending = migrations.filter((migration) => migration.when > lastApplied)
      for (const migration of pending) {
        for (const statement of migration.sql.split('--> statement-breakpoint')) {
          if (statement.trim() !== '') await tx.unsafe(statement)
        }
        // What SQL cannot write, in the same transaction as the migration that needs it.
        if (migration.tag === SEARCH_KEY_MIGRATION) await fillSearchKeys(tx)
        await tx`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (${sha256Hex(migration.sql)}, ${migration.when})`
      }
      return { applied: pending.map((migration) => migration.tag) }
    })
  } catch (error) {
    if (error instanceof DatabaseOpenError) throw error
    throw new DatabaseOpenError(
      `cannot migrate the PostgreSQL database: ${(error as Error).message}`,
    )
  }
}
