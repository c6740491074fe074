/**
 * How `q` compares text, written once so both databases answer alike: decomposed (NFKD), the
 * combining marks dropped, lower-cased. "José" and "JOSE" are both "jose"; "ﬁ" is "fi". The
 * database never folds: it keeps the folded name and email in `users.search_key`, indexed by
 * SQLite's FTS5 trigram table and PostgreSQL's pg_trgm, and `q` is folded here the same way.
 * (SQLite's own folding depends on its version, and on macOS Bun uses the system's SQLite.)
 */
export function foldForSearch(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
}

/**
 * A user's stored search key: the folded name and email on two lines. Names and emails hold
 * no line breaks and neither may `q`, so no match spans the two.
 */
export function searchKeyOf(name: string, email: string): string {
  return `${foldForSearch(name.trim())}\n${foldForSearch(email)}`
}
