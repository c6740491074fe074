/**
 * A row id as it appears in paths, cursors and the command line: a positive integer of at most
 * 16 decimal digits, no sign, no leading zero, at most 2^53 - 1 (SQLite's integer keys go
 * higher; JavaScript numbers do not).
 */
export const ROW_ID_DIGITS = '[1-9][0-9]{0,15}'

const ROW_ID = new RegExp(`^${ROW_ID_DIGITS}$`)

/** The id written in `text`, or null when it is not one. */
export function parseRowId(text: string | null | undefined): number | null {
  if (text === null || text === undefined || !ROW_ID.test(text)) return null
  const id = Number(text)
  return id <= Number.MAX_SAFE_INTEGER ? id : null
}
