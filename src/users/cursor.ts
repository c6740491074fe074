import { parseRowId, ROW_ID_DIGITS } from '../db/row-id'

/** A keyset position: the page holds the rows after (or before) this id. */
export interface Cursor {
  direction: 'after' | 'before'
  id: number
}

const CURSOR_FORMAT = /^[A-Za-z0-9_-]{1,40}$/
const PAYLOAD_FORMAT = new RegExp(`^([ab]):(${ROW_ID_DIGITS})$`)

/**
 * v2 keyset cursors: opaque to clients (base64url of `a:<id>` or `b:<id>`). They carry only the
 * position; the client resends limit and filters with them.
 */
export function writeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.direction === 'after' ? 'a' : 'b'}:${cursor.id}`).toString(
    'base64url',
  )
}

/** The position a cursor points at; null when it is not a cursor this service issued. */
export function readCursor(text: string): Cursor | null {
  const payload = CURSOR_FORMAT.test(text) ? Buffer.from(text, 'base64url').toString('latin1') : ''
  const match = PAYLOAD_FORMAT.exec(payload)
  const id = parseRowId(match?.[2])
  if (match === null || id === null) return null
  return { direction: match[1] === 'a' ? 'after' : 'before', id }
}
