/**
 * Conditional request checks (RFC 9110 §13). GET uses weak comparison for If-None-Match;
 * writes use strong comparison for If-Match, so a weak tag never satisfies it.
 */
export function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return true
  const bare = stripWeak(etag)
  return !tags(header).some((tag) => tag === '*' || stripWeak(tag) === bare)
}

/** True when If-Match is absent or lists the current strong ETag (or `*`). */
export function ifMatchHolds(header: string | null, etag: string): boolean {
  if (header === null) return true
  return tags(header).some((tag) => tag === '*' || (!tag.startsWith('W/') && tag === etag))
}

function tags(header: string): string[] {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '')
}

function stripWeak(tag: string): string {
  return tag.startsWith('W/') ? tag.slice(2) : tag
}
