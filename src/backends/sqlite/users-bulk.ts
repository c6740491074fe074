import { Database } from 'bun:sqlite'
import { type ExportedUser, emailKey, type NewUser } from '../../users/records'
import { searchKeyOf } from '../../users/search-key'
import type { UserRows } from '../../users/store'
import type { Store } from './connection'
import { isUniqueViolation } from './errors'
import { settle } from './settle'

/** Users per batch of an export. */
const EXPORT_BATCH = 500

const ROLLBACK = Symbol('rollback')

type BulkPart = Pick<UserRows, 'emailKeysTaken' | 'exportAll' | 'insertMany'>

const EXPORT_SQL =
  'SELECT id, name, email, created_at, updated_at, password_hash FROM users ORDER BY id'

/**
 * Users in bulk, for import and export (the CLI's, and GET /users/export): statements of their
 * own, off the per-request ones. Part of the SQLite users store.
 */
export function createSqliteUserBulk(store: Store, now: () => Date): BulkPart {
  const writer = store.db.$client
  const takenKeys = store.reader.query<{ email_key: string }, [string]>(
    // An address that is another user's username (other than its email) is taken too.
    `SELECT email_key FROM users WHERE email_key IN (SELECT value FROM json_each(?1))
     UNION SELECT username_key FROM users WHERE username_key IN (SELECT value FROM json_each(?1))
       AND username_key <> email_key`,
  )
  const insertPlain = writer.query(
    `INSERT INTO users (name, email, email_key, username, username_key, password_hash, created_at,
       updated_at, search_key) VALUES (?1, ?2, ?3, ?2, ?3, ?4, ?5, ?5, ?6)`,
  )
  // Alone (the CLI) this is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()

  return {
    emailKeysTaken: (keys) =>
      settle(() => {
        if (keys.length === 0) return new Set<string>()
        return new Set(takenKeys.all(JSON.stringify(keys)).map((row) => row.email_key))
      }),

    /**
     * Read on a connection of its own, inside one read transaction, so the export is one
     * consistent snapshot and requests that run while it streams neither wait for it nor see
     * its snapshot. Closed when the iteration ends or is abandoned (a client that went away).
     */
    async *exportAll(): AsyncGenerator<readonly ExportedUser[]> {
      const snapshot = new Database(store.reader.filename, { readonly: true, strict: true })
      try {
        snapshot.run('PRAGMA busy_timeout = 5000')
        snapshot.run('BEGIN')
        let batch: ExportedUser[] = []
        for (const row of snapshot.query<ExportedUser, []>(EXPORT_SQL).iterate()) {
          batch.push(row)
          if (batch.length < EXPORT_BATCH) continue
          yield batch
          batch = []
        }
        if (batch.length > 0) yield batch
        snapshot.run('COMMIT')
      } finally {
        snapshot.close()
      }
    },

    insertMany: (rows: readonly NewUser[], options: { allOrNothing: boolean }) =>
      settle(() => {
        const conflicts: number[] = []
        let inserted = 0
        const at = now().toISOString()
        try {
          transaction(() => {
            rows.forEach((row, index) => {
              try {
                insertPlain.run(
                  row.name.trim(),
                  row.email,
                  emailKey(row.email),
                  row.passwordHash,
                  at,
                  searchKeyOf(row.name, row.email),
                )
                inserted += 1
              } catch (error) {
                if (!isUniqueViolation(error)) throw error
                conflicts.push(index)
              }
            })
            if (options.allOrNothing && conflicts.length > 0) throw ROLLBACK
          })
        } catch (error) {
          if (error !== ROLLBACK) throw error
          inserted = 0
        }
        store.committedAlone()
        return { inserted, conflicts }
      }),
  }
}
