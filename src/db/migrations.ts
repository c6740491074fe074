import { DatabaseOpenError } from './errors'

/** One embedded migration: drizzle-kit's tag and timestamp, and its SQL. */
export interface Migration {
  tag: string
  when: number
  sql: string
}

/** Refuses a database that has migrations this binary does not know (SQLite and PostgreSQL). */
export function refuseNewerDatabase(
  applied: readonly { created_at: number | string }[],
  migrations: readonly Migration[],
): void {
  const newestKnown = migrations.at(-1)?.when ?? 0
  const unknown = applied.filter((row) => Number(row.created_at) > newestKnown)
  if (unknown.length > 0 || applied.length > migrations.length) {
    throw new DatabaseOpenError(
      `this database was written by a newer roster (it has ${applied.length} migrations, this binary knows ${migrations.length}); upgrade roster or restore a backup made by this version`,
    )
  }
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher('sha256').update(text).digest('hex')
}
