import type { PageRequest } from '../db/page'
import { QueryReader } from './query'
import { publicBaseUrl } from './request-context'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

export type { PageRequest }

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

/** Where a link points: an offset page, or a keyset page after a cursor. */
export type LinkTarget = { offset: number } | { cursor: string }

export type LinkTargets = Partial<Record<'first' | 'prev' | 'next' | 'last', LinkTarget>>

/** first and last always, prev unless on the first page, next unless on the last. */
export function offsetTargets({ limit, offset, total }: Pagination): LinkTargets {
  return {
    first: { offset: 0 },
    prev: offset > 0 ? { offset: Math.max(0, offset - limit) } : undefined,
    next: offset + limit < total ? { offset: offset + limit } : undefined,
    last: { offset: lastOffset(total, limit) },
  }
}

export interface LinkOptions {
  /** Absolute base, e.g. `http://localhost:8080`, and the path the list was requested on. */
  base: string
  path: string
  limit: number
  targets: LinkTargets
  /** Parameters other than limit/offset/cursor (filters) that every link repeats. */
  keep?: Record<string, string | undefined>
}

/** The RFC 8288 `Link` header for a list page. */
export function linkHeader(options: LinkOptions): string {
  let prefix = `<${options.base}${options.path}?`
  for (const [key, value] of Object.entries(options.keep ?? {})) {
    if (value !== undefined) prefix += `${key}=${encodeURIComponent(value)}&`
  }
  prefix += `limit=${options.limit}&`
  let header = ''
  for (const rel of ['first', 'prev', 'next', 'last'] as const) {
    const target = options.targets[rel]
    if (target === undefined) continue
    const position =
      'cursor' in target ? `cursor=${encodeURIComponent(target.cursor)}` : `offset=${target.offset}`
    header += `${header === '' ? '' : ', '}${prefix}${position}>; rel="${rel}"`
  }
  return header
}

/**
 * An offset-paginated list answer: reads `limit` and `offset` (a bad or repeated value is a
 * VALIDATION_ERROR; unknown query parameters are ignored, as on every route, so a client may
 * add its own, such as a cache buster), lists the page, and sets X-Total-Count and Link.
 * Shared by every list but v2's.
 */
export async function offsetPageAnswer<T, F extends Record<string, string | undefined>>(
  request: Request,
  set: { headers: Record<string, string | number | undefined> },
  options: {
    path: string
    publicUrl: string | null
    /** Reads the list's filters, if it has any; every link repeats them. */
    filters?: (query: QueryReader) => F
    list: (page: PageRequest, filters: F) => Promise<{ data: T[]; total: number }>
  },
): Promise<{ data: T[]; pagination: Pagination }> {
  const query = new QueryReader(request.url)
  const page = readPage(query)
  const filters = options.filters?.(query) ?? ({} as F)
  query.assertValid()
  const { data, total } = await options.list(page, filters)
  const pagination = { ...page, total }
  set.headers['x-total-count'] = String(total)
  set.headers.link = linkHeader({
    base: publicBaseUrl(request, options.publicUrl),
    path: options.path,
    limit: page.limit,
    targets: offsetTargets(pagination),
    keep: filters,
  })
  return { data, pagination }
}
