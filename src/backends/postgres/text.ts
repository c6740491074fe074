/**
 * A value to look up by, as PostgreSQL can take it: its text cannot hold U+0000 (SQLite's
 * can). No stored name, email or limiter subject is meant to hold a control character
 * (validation refuses them), so U+0001 matches exactly what U+0000 would: nothing.
 */
export function lookupText(text: string): string {
  return text.replaceAll('\u0000', '\u0001')
}
