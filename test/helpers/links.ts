/** The targets of an RFC 8288 `Link` header, by relation: `{ next: 'http://…', … }`. */
export function linkTargets(header: string | null): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of (header ?? '').split(', ')) {
    const match = /^<([^>]+)>; rel="(\w+)"$/.exec(part)
    if (match) out[match[2] as string] = match[1] as string
  }
  return out
}
