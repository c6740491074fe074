/**
 * sort=name on SQLite, unfiltered. `users_name_order` (migration 0018) holds the users up to
 * the search indexer's mark in name order, kept by the indexer off the write path
 * (search-index.ts); the users above the mark and the stale ones (renamed or deleted since they
 * were indexed) are read from `users` directly, as `q` reads them. The three arms are disjoint,
 * and SQLite merges arms that each come in order, so a page reads `limit` entries of the
 * order's primary key plus the few users the indexer has not reached, whatever the roster's
 * size. (A filtered list sorts its matches instead: backends/sqlite/users.ts.)
 *
 * A keyset read compares with the position (`$key`, `$at`); the arms answer `k` (the key) and
 * `at` (the id).
 */
export function nameOrderArms(comparison: '>' | '<' | null): string {
  const past = (key: string, id: string) =>
    comparison === null ? '' : ` AND (${key}, ${id}) ${comparison} ($key, $at)`
  return `SELECT name_key AS k, user_id AS at FROM users_name_order
    WHERE user_id NOT IN (SELECT id FROM users_search_stale)${past('name_key', 'user_id')}
  UNION ALL
  SELECT search_key, id FROM users
    WHERE id > (SELECT through FROM users_indexed WHERE id = 1)${past('search_key', 'id')}
  UNION ALL
  SELECT search_key, id FROM users
    WHERE id IN (SELECT id FROM users_search_stale)${past('search_key', 'id')}`
}

/**
 * A page of users in name order: `columns` of the `$limit` users whose entries come first in
 * `order` after the position (or from `$offset`).
 */
export function nameOrderPage(options: {
  columns: string
  comparison: '>' | '<' | null
  order: 'ASC' | 'DESC'
  offset: boolean
}): string {
  const { columns, comparison, order } = options
  return `SELECT ${columns} FROM (
    ${nameOrderArms(comparison)}
    ORDER BY k ${order}, at ${order} LIMIT $limit${options.offset ? ' OFFSET $offset' : ''}
  ) AS page CROSS JOIN users ON users.id = page.at
  ORDER BY page.k ${order}, page.at ${order}`
}
