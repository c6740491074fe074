/**
 * Conditional request checks (RFC 9110 §13). GET uses weak comparison for If-None-Match;
 * writes use strong comparison for If-Match, so a weak tag never satisfies it.
 */
export function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return true
  const bare = stripWeak(etag)
  return !tags(header).some((tag) => tag === '*' || stripWeak(tag) === bare)
}

/**
 * The strong tags If-Match lists (weak ones never match a write), or null when it is absent or
 * `*` (any current version will do).
 */
export function ifMatchTags(header: string | null): string[] | null {
  if (header === null) return null
  const listed = tags(header)
  if (listed.includes('*')) return null
  return listed.filter((tag) => !tag.startsWith('W/'))
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
