/** A page's rows, each carrying the total as `(count(*) OVER ())::int AS total`. */
export type WithTotal<T> = T & { total: number }

/**
 * A page and its total from one statement (one snapshot). Past the last page no row carries
 * the total, so then `countAll` is asked (a second statement, only in that case).
 */
export async function pageOf<T>(
  rows: WithTotal<T>[],
  countAll: () => Promise<{ n: number }[]>,
): Promise<{ data: T[]; total: number }> {
  const total = rows[0]?.total ?? (await countAll())[0]?.n ?? 0
  return { data: rows.map(({ total: _, ...row }) => row as T), total }
}

/** The `n` of a `SELECT count(*)::int AS n` statement. */
export async function countOf(query: Promise<{ n: number }[]>): Promise<number> {
  return (await query)[0]?.n ?? 0
}
