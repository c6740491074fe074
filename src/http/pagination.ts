import type { Chronology, ListRequest, PageRequest } from '../db/page'
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
    /** A list in creation order that `sort` may turn around: which end it shows first unasked. */
    usually?: Chronology
    list: (page: ListRequest, filters: F) => Promise<{ data: T[]; total: number }>
  },
): Promise<{ data: T[]; pagination: Pagination }> {
  const query = new QueryReader(request.url)
  const page = readPage(query)
  const filters = options.filters?.(query) ?? ({} as F)
  const sort = options.usually === undefined ? undefined : readCreatedSort(query, options.usually)
  query.assertValid()
  const first = sort === undefined ? undefined : CHRONOLOGY_OF[sort]
  const { data, total } = await options.list(
    first === undefined ? page : { ...page, first },
    filters,
  )
  const pagination = { limit: page.limit, offset: page.offset, total }
  set.headers['x-total-count'] = String(total)
  set.headers.link = linkHeader({
    base: publicBaseUrl(request, options.publicUrl),
    path: options.path,
    limit: page.limit,
    targets: offsetTargets(pagination),
    // The sort is repeated only when asked for: the usual order's links stay as they were.
    keep: { ...filters, sort: query.has('sort') ? sort : undefined },
  })
  return { data, pagination }
}

/**
 * `sort` on a list in creation order: `created` (oldest first) or `-created` (newest first),
 * as GET /v2/users writes its orders; the list's usual order when absent.
 */
export const CREATED_SORTS = ['created', '-created'] as const
export type CreatedSort = (typeof CREATED_SORTS)[number]

const CHRONOLOGY_OF: Record<CreatedSort, Chronology> = { created: 'oldest', '-created': 'newest' }

function readCreatedSort(query: QueryReader, usually: Chronology): CreatedSort {
  return query.oneOf('sort', CREATED_SORTS, usually === 'newest' ? '-created' : 'created')
}
