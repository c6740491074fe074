export type RangeChoice =
  | { kind: 'full' }
  | { kind: 'partial'; start: number; end: number }
  | { kind: 'unsatisfiable' }

const SINGLE = /^bytes=(\d*)-(\d*)$/i

/**
 * One `Range: bytes=…` against a file of `size` bytes (RFC 9110 §14). A range that cannot be
 * read (malformed, several ranges, another unit, or an If-Range that names an older version)
 * is ignored and the whole file is sent; a well-formed range that starts past the end is
 * unsatisfiable (416).
 */
export function chooseRange(header: string | null, size: number, ifRangeHolds = true): RangeChoice {
  if (header === null || !ifRangeHolds) return { kind: 'full' }
  const match = SINGLE.exec(header.trim())
  if (match === null) return { kind: 'full' }
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return { kind: 'full' }
  if (first === '') {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' }
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  if (last !== '' && Number(last) < start) return { kind: 'full' }
  if (start >= size) return { kind: 'unsatisfiable' }
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
  return { kind: 'partial', start, end }
}
