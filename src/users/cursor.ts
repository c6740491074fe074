import type { QueryReader } from '../http/query'

const CURSOR_FORMAT = /^[A-Za-z0-9_-]{1,40}$/
const PAYLOAD_FORMAT = /^id:([1-9][0-9]{0,15})$/

/**
 * v2 keyset cursors. Opaque to clients (base64url of the last id seen); the client resends
 * limit and filters with it, so the cursor carries only the position.
 */
export function writeCursor(lastId: number): string {
  return Buffer.from(`id:${lastId}`).toString('base64url')
}

/** The id a cursor points after; a malformed one is recorded on the reader as a `cursor` error. */
export function readCursor(text: string, query: QueryReader): number | undefined {
  const payload = CURSOR_FORMAT.test(text) ? Buffer.from(text, 'base64url').toString('latin1') : ''
  const id = Number(PAYLOAD_FORMAT.exec(payload)?.[1] ?? Number.NaN)
  if (!Number.isSafeInteger(id)) {
    query.reject('cursor', 'is not a cursor this service issued', text)
    return undefined
  }
  return id
}
