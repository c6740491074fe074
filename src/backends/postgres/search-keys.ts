import type { SQL } from 'bun'
import { searchKeyOf } from '../../users/search-key'

/** The migration that adds `users.search_key`, empty on the rows that exist. */
export const SEARCH_KEY_MIGRATION = '0016_search_key'

/** Rows per read and per UPDATE while filling: memory stays bounded on a table of millions. */
const BATCH = 10_000

/**
 * Fills every existing user's search key (the folding is JavaScript's, users/search-key.ts),
 * inside the migration's transaction, before the next migration builds the index on it: one
 * UPDATE per batch, from two arrays.
 */
export async function fillSearchKeys(tx: SQL): Promise<void> {
  let after = 0
  // `users.id`, not `id`: ORDER BY id would sort by the text column of the same name.
  for (;;) {
    const rows = await tx<{ id: string; name: string; email: string }[]>`
      SELECT id::text AS id, name, email FROM users WHERE users.id > ${after}::int8
      ORDER BY users.id LIMIT ${BATCH}`
    if (rows.length > 0) {
      const ids = rows.map((row) => row.id)
      const keys = rows.map((row) => searchKeyOf(row.name, row.email))
      await tx`
        UPDATE users SET search_key = filled.key
        FROM unnest(${ids}::int8[], ${keys}::text[]) AS filled(id, key)
        WHERE users.id = filled.id`
    }
    const last = rows.at(-1)
    if (last === undefined || rows.length < BATCH) return
    after = Number(last.id)
  }
}
