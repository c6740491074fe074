import { type Cursor, SORT_CHOICES, type UserSort } from './search'

/** Every cursor fits: a key is at most a folded name and email (NFKD may lengthen a name). */
export const MAX_CURSOR_LENGTH = 16_384

const CURSOR_FORMAT = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_CURSOR_LENGTH}}$`)
/** `a:<id>` by id; `a:<id>:-id` by id descending; `a:<id>:<sort>:<key>` by a key (which may hold colons). */
const PAYLOAD_FORMAT = /^([ab]):(0|[1-9][0-9]{0,15})(?::(-?[a-z]+)(?::(.*))?)?$/s
/** Keys hold no control character but the line break between a name and an email. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const KEY_FORMAT = /^[^\u0000-\u0009\u000b-\u001f\u007f]*$/

/**
 * v2 keyset cursors: opaque to clients (base64url of the payload above). They carry the
 * position and the sort it belongs to; the client resends limit, filters and sort with them.
 */
export function writeCursor(cursor: Cursor): string {
  const direction = cursor.direction === 'after' ? 'a' : 'b'
  const sorted =
    cursor.key === undefined
      ? cursor.sort === 'id'
        ? ''
        : `:${cursor.sort}`
      : `:${cursor.sort}:${cursor.key}`
  return Buffer.from(`${direction}:${cursor.id}${sorted}`).toString('base64url')
}

/** The position a cursor points at; null when it is not a cursor this service issued. */
export function readCursor(text: string): Cursor | null {
  const payload = CURSOR_FORMAT.test(text) ? Buffer.from(text, 'base64url').toString('utf8') : ''
  const match = PAYLOAD_FORMAT.exec(payload)
  if (match === null) return null
  const [, direction, digits, sortText = 'id', key] = match
  const id = Number(digits)
  const sort = SORT_CHOICES.find((choice) => choice === sortText)
  if (!Number.isSafeInteger(id) || sort === undefined) return null
  const keyed = sort !== 'id' && sort !== '-id'
  if (keyed !== (key !== undefined) || (key !== undefined && !KEY_FORMAT.test(key))) return null
  return {
    direction: direction === 'a' ? 'after' : 'before',
    sort: sort as UserSort,
    id,
    ...(key === undefined ? {} : { key }),
  }
}
