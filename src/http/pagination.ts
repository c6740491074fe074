import type { QueryReader } from './query'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

export interface PageRequest {
  limit: number
  offset: number
}

export interface Pagination extends PageRequest {
  total: number
}

/** `limit` (1–100, default 20) and `offset` (≥ 0, default 0), as every list route takes them. */
export function readPage(query: QueryReader): PageRequest {
  return {
    limit: query.integer('limit', { min: 1, max: MAX_LIMIT, fallback: DEFAULT_LIMIT }),
    offset: query.integer('offset', { min: 0, fallback: 0 }),
  }
}

/** Offset of the last page: floor((total-1)/limit)*limit, 0 when the list is empty. */
export function lastOffset(total: number, limit: number): number {
  return total === 0 ? 0 : Math.floor((total - 1) / limit) * limit
}

export interface LinkOptions {
  /** Absolute base, e.g. `http://localhost:8080`, and the path the list was requested on. */
  base: string
  path: string
  page: Pagination
  /** Parameters other than limit/offset (filters) that every link must repeat. */
  keep?: Record<string, string | undefined>
  /** For keyset pagination: the cursor of the next page, used for `next` instead of an offset. */
  nextCursor?: string | null
}

/**
 * The RFC 8288 `Link` header: `first` and `last` always, `prev` unless on the first page,
 * `next` unless on the last.
 */
export function linkHeader(options: LinkOptions): string {
  const { limit, offset, total } = options.page
  const last = lastOffset(total, limit)
  const link = (rel: string, params: Record<string, string>) => {
    const search = new URLSearchParams()
    for (const [key, value] of Object.entries(options.keep ?? {})) {
      if (value !== undefined) search.set(key, value)
    }
    for (const [key, value] of Object.entries(params)) search.set(key, value)
    return `<${options.base}${options.path}?${search}>; rel="${rel}"`
  }
  const links = [link('first', { limit: String(limit), offset: '0' })]
  if (offset > 0) {
    links.push(link('prev', { limit: String(limit), offset: String(Math.max(0, offset - limit)) }))
  }
  if (offset + limit < total) {
    links.push(
      options.nextCursor
        ? link('next', { limit: String(limit), cursor: options.nextCursor })
        : link('next', { limit: String(limit), offset: String(offset + limit) }),
    )
  }
  links.push(link('last', { limit: String(limit), offset: String(last) }))
  return links.join(', ')
}
