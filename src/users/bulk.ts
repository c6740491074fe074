import { Database } from 'bun:sqlite'
import type { Store } from '../db/client'
import { EXPORT_SQL, type ExportedUser, emailKey } from './records'

const ROLLBACK = Symbol('rollback')

/**
 * Users in bulk, for import and export (the CLI's, and GET /users/export): statements of their
 * own, off the per-request ones. Part of the users service.
 */
export function createUserTransfer(store: Store, now: () => Date) {
  const sqlite = store.reader
  const writer = store.db.$client
  const takenKeys = sqlite.query<{ email_key: string }, [string]>(
    'SELECT email_key FROM users WHERE email_key IN (SELECT value FROM json_each(?))',
  )
  const insertPlain = writer.query(
    `INSERT INTO users (name, email, email_key, password_hash, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?5)`,
  )
  const exportRows = sqlite.query<ExportedUser, []>(EXPORT_SQL)
  // Alone (the CLI) this is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()

  return {
    /** Which of these emails users already have, as email keys (one query for all). */
    emailsTaken(emails: readonly string[]): Set<string> {
      if (emails.length === 0) return new Set()
      const keys = JSON.stringify(emails.map(emailKey))
      return new Set(takenKeys.all(keys).map((row) => row.email_key))
    },

    /**
     * Every user, for an export over HTTP: read on a connection of its own, inside one read
     * transaction, so the export is one consistent snapshot and requests that run while it
     * streams neither wait for it nor see its snapshot. Closed when the generator ends or is
     * abandoned (`return()`, a client that went away).
     */
    *exportSnapshot(): Generator<ExportedUser> {
      const snapshot = new Database(store.reader.filename, { readonly: true, strict: true })
      try {
        snapshot.run('PRAGMA busy_timeout = 5000')
        snapshot.run('BEGIN')
        yield* snapshot.query<ExportedUser, []>(EXPORT_SQL).iterate()
        snapshot.run('COMMIT')
      } finally {
        snapshot.close()
      }
    },

    /**
     * Every user in id order, password hash included, from one snapshot: the read transaction
     * stays open until the iteration ends (for export; writers are not held up in WAL mode).
     */
    *exportAll(): Generator<ExportedUser> {
      sqlite.run('BEGIN')
      try {
        yield* exportRows.iterate()
      } finally {
        sqlite.run('COMMIT')
      }
    },

    /**
     * Inserts many users in one transaction of their own (one fsync; for the CLI's import,
     * not the request path). A row whose email is taken is
     * reported by index; with `allOrNothing`, any such row rolls the whole batch back.
     */
    insertMany(
      rows: readonly { name: string; email: string; passwordHash: string | null }[],
      options: { allOrNothing: boolean },
    ): { inserted: number; conflicts: number[] } {
      const conflicts: number[] = []
      let inserted = 0
      const at = now().toISOString()
      try {
        transaction(() => {
          rows.forEach((row, index) => {
            try {
              insertPlain.run(row.name.trim(), row.email, emailKey(row.email), row.passwordHash, at)
              inserted += 1
            } catch (error) {
              if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') throw error
              conflicts.push(index)
            }
          })
          if (options.allOrNothing && conflicts.length > 0) throw ROLLBACK
        })
      } catch (error) {
        if (error !== ROLLBACK) throw error
        inserted = 0
      }
      return { inserted, conflicts }
    },
  }
}
