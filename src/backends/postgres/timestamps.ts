/** A users row as PostgreSQL hands it over: timestamptz columns arrive as Dates. */
export type Stored<T extends { created_at: string; updated_at: string }> = Omit<
  T,
  'created_at' | 'updated_at'
> & { created_at: Date; updated_at: Date }

/**
 * A users row with its timestamps as the API shows them (ISO 8601 with milliseconds and "Z", the
 * text SQLite stores). PostgreSQL keeps them as timestamptz(3) (schema's `users`), so the
 * milliseconds are all there is.
 */
export function withIsoTimestamps<T extends { created_at: string; updated_at: string }>(
  row: Stored<T>,
): T {
  return {
    ...row,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  } as unknown as T
}
