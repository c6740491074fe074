import type { Database } from 'bun:sqlite'
import { searchKeyOf } from '../../users/search-key'

/** The migration that adds `users.search_key`, empty on the rows that exist. */
export const SEARCH_KEY_MIGRATION = '0016_search_key'

/** Rows per read while filling: memory stays bounded on a table of millions. */
const BATCH = 10_000

/**
 * Fills every existing user's search key (the folding is JavaScript's, users/search-key.ts),
 * inside the migration's transaction, before the next migration builds the index on it.
 */
export function fillSearchKeys(sqlite: Database): void {
  const read = sqlite.query<{ id: number; name: string; email: string }, [number]>(
    `SELECT id, name, email FROM users WHERE id > ? ORDER BY id LIMIT ${BATCH}`,
  )
  const write = sqlite.query('UPDATE users SET search_key = ? WHERE id = ?')
  let after = 0
  for (;;) {
    const rows = read.all(after)
    for (const row of rows) write.run(searchKeyOf(row.name, row.email), row.id)
    const last = rows.at(-1)
    if (last === undefined || rows.length < BATCH) return
    after = last.id
  }
}
