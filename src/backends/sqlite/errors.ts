import { UniqueViolation } from '../../db/conflict'

/** Whether SQLite refused a write for a unique index. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/** `write`, with SQLite's unique-index refusal said as the backend-neutral UniqueViolation. */
export function neutralUnique<T>(write: () => T): T {
  try {
    return write()
  } catch (error) {
    if (isUniqueViolation(error)) throw new UniqueViolation(uniqueColumn(error))
    throw error
  }
}

/** The (last) column SQLite names in "UNIQUE constraint failed: users.email_key". */
function uniqueColumn(error: unknown): string | null {
  const message = (error as { message?: string }).message ?? ''
  return /UNIQUE constraint failed: (?:[\w.]+, )*\w+\.(\w+)$/.exec(message)?.[1] ?? null
}
