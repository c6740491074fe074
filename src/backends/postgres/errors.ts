import { UniqueViolation } from '../../db/conflict'

const UNIQUE_VIOLATION = '23505'

/** Whether PostgreSQL refused a write for a unique index. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { errno?: string } | null)?.errno === UNIQUE_VIOLATION
}

/** `write`, with PostgreSQL's unique-index refusal said as the backend-neutral UniqueViolation. */
export async function neutralUnique<T>(write: Promise<T>): Promise<T> {
  try {
    return await write
  } catch (error) {
    if (isUniqueViolation(error)) throw new UniqueViolation(uniqueColumn(error))
    throw error
  }
}

/** The column PostgreSQL names in its detail: "Key (email_key)=(…) already exists." */
function uniqueColumn(error: unknown): string | null {
  const detail = (error as { detail?: string }).detail ?? ''
  return /^Key \((\w+)\)=/.exec(detail)?.[1] ?? null
}
