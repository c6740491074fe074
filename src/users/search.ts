import { emailKey, type User, type UserFilters } from './records'
import { foldForSearch, searchKeyOf } from './search-key'

/** The longest `q` (a substring of name or email) a search takes. */
export const MAX_QUERY_LENGTH = 200

/**
 * The orders a v2 list may ask for (`sort`), `-` for descending, as PocketBase and JSON:API
 * write it. `name` orders by the folded name (users/search-key.ts: case and accents aside,
 * then the email), `email` by the email as uniqueness folds it; both compare code points, the
 * same on every database, and ties go by id. `id` is creation order.
 */
export const SORT_CHOICES = ['id', '-id', 'name', '-name', 'email', '-email'] as const
export type UserSort = (typeof SORT_CHOICES)[number]

/** The column a sort orders by, besides the id that breaks ties. */
export type SortKey = 'name' | 'email' | null

export function sortKeyOf(sort: UserSort): SortKey {
  const field = sort.replace('-', '')
  return field === 'id' ? null : (field as SortKey)
}

export function isDescending(sort: UserSort): boolean {
  return sort.startsWith('-')
}

/** Where a user stands in a sort: its id and, for name and email, the key the database orders. */
export function positionOf(user: Pick<User, 'id' | 'name' | 'email'>, sort: UserSort): Position {
  const key = sortKeyOf(sort)
  if (key === null) return { id: user.id }
  return {
    id: user.id,
    key: key === 'name' ? searchKeyOf(user.name, user.email) : emailKey(user.email),
  }
}

/**
 * The place just past `position` in the sort's direction: ids are whole numbers, so the rows
 * before it are those up to and including `position` (an empty page still links back to it).
 */
function justAfter(position: Position, sort: UserSort): Position {
  return { ...position, id: position.id + (isDescending(sort) ? -1 : 1) }
}

/** The place just before `position` in the sort's direction (justAfter's mirror). */
function justBefore(position: Position, sort: UserSort): Position {
  return { ...position, id: position.id + (isDescending(sort) ? 1 : -1) }
}

/**
 * How a keyset read compares and orders for a sort: rows after a position (in the sort's
 * order) are greater than it when ascending, smaller when descending; rows before it are read
 * nearest first, so in the opposite order.
 */
export function keysetOrder(
  sort: UserSort,
  side: 'after' | 'before',
): { comparison: '>' | '<'; order: 'ASC' | 'DESC' } {
  const ascending = isDescending(sort) === (side === 'before')
  return ascending ? { comparison: '>', order: 'ASC' } : { comparison: '<', order: 'DESC' }
}

/** Where a row stands in a sort: its id and, unless the sort is by id, the sort's key. */
export interface Position {
  id: number
  key?: string
}

/** A keyset position in a sort: the page holds the rows after (or before) it. */
export interface Cursor extends Position {
  direction: 'after' | 'before'
  sort: UserSort
}

export interface SearchRequest {
  limit: number
  sort: UserSort
  /** Ignored when a cursor is given. */
  offset: number
  cursor?: Cursor
  filters: UserFilters
  /** False: the client asked for no total (`count=none`), and none is read. */
  counted: boolean
}

export interface SearchResult {
  data: User[]
  /** Null when the request was not counted. */
  total: number | null
  /** The page's offset; null for a page chosen by cursor, whose position is not counted. */
  offset: number | null
  /** The cursor of the next page, or null on the last page. */
  next: Cursor | null
  /** How to reach the previous page: a cursor, an offset, or null on the first page. */
  prev: Cursor | { offset: number } | null
}

/**
 * The filters as a database compares them: the email folded as uniqueness folds it, `q` as the
 * search key is folded (search-key.ts).
 */
export interface SearchFilters {
  emailKey?: string
  q?: string
}

/** Characters from which a trigram index can find `q`; a shorter one is a scan. */
export const INDEXED_QUERY_LENGTH = 3

/** `q` as a LIKE pattern that matches it anywhere (`\\` escapes, as both databases take it). */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, '\\$&')}%`
}

/**
 * One read the v2 list asks of the database, over the request's filters and in its sort:
 * how many users match; a page from an offset; the page after (or before, the nearest first)
 * a position; whether any user lies before or after a position (keysetOrder says how).
 */
export type SearchStep =
  | { kind: 'count' }
  | { kind: 'fromOffset'; offset: number; limit: number }
  | { kind: 'after'; at: Position; limit: number }
  | { kind: 'before'; at: Position; limit: number }
  | { kind: 'exists'; side: 'before' | 'after'; at: Position }

/** What each step answers: a count, a page of users, or whether one exists. */
export type StepAnswer = number | User[] | boolean

export function searchFilters(filters: UserFilters): SearchFilters {
  return {
    ...(filters.email === undefined ? {} : { emailKey: emailKey(filters.email) }),
    ...(filters.q === undefined ? {} : { q: foldForSearch(filters.q) }),
  }
}

/**
 * The v2 list, written once for every database: a generator that yields the reads it needs
 * and is given their answers, so SQLite runs it synchronously inside one read transaction and
 * PostgreSQL with awaits inside one snapshot (runSearch, runSearchAsync). A keyset page reads
 * from the primary key in its direction and never counts the rows before it, so a deep page
 * costs what the first one does; whether a page exists beyond it is a one-row probe.
 */
export function* searchPlan(
  request: SearchRequest,
): Generator<SearchStep, SearchResult, StepAnswer> {
  const { limit, cursor, sort } = request
  const total = request.counted ? ((yield { kind: 'count' }) as number) : null
  if (cursor === undefined) {
    const rows = (yield { kind: 'fromOffset', offset: request.offset, limit: limit + 1 }) as User[]
    const data = rows.slice(0, limit)
    const last = data.at(-1)
    return {
      data,
      total,
      offset: request.offset,
      next:
        rows.length > limit && last
          ? { direction: 'after', sort, ...positionOf(last, sort) }
          : null,
      prev: request.offset > 0 ? { offset: Math.max(0, request.offset - limit) } : null,
    }
  }
  const at: Position =
    cursor.key === undefined ? { id: cursor.id } : { id: cursor.id, key: cursor.key }
  const forward = cursor.direction === 'after'
  const rows = (yield { kind: forward ? 'after' : 'before', at, limit: limit + 1 }) as User[]
  const more = rows.length > limit
  const data = forward ? rows.slice(0, limit) : rows.slice(0, limit).reverse()
  const firstRow = data[0]
  const lastRow = data.at(-1)
  const first = firstRow ? positionOf(firstRow, sort) : forward ? justAfter(at, sort) : at
  const last = lastRow ? positionOf(lastRow, sort) : forward ? at : justBefore(at, sort)
  const hasBefore = forward
    ? ((yield { kind: 'exists', side: 'before', at: first }) as boolean)
    : more
  const hasAfter = forward ? more : ((yield { kind: 'exists', side: 'after', at: last }) as boolean)
  return {
    data,
    total,
    offset: null,
    next: hasAfter ? { direction: 'after', sort, ...last } : null,
    prev: hasBefore ? { direction: 'before', sort, ...first } : null,
  }
}

/** Runs the plan with reads that answer at once (SQLite). */
export function runSearch(
  request: SearchRequest,
  read: (step: SearchStep) => StepAnswer,
): SearchResult {
  const plan = searchPlan(request)
  let step = plan.next()
  while (!step.done) step = plan.next(read(step.value))
  return step.value
}

/** Runs the plan with reads that answer later (PostgreSQL). */
export async function runSearchAsync(
  request: SearchRequest,
  read: (step: SearchStep) => Promise<StepAnswer>,
): Promise<SearchResult> {
  const plan = searchPlan(request)
  let step = plan.next()
  while (!step.done) step = plan.next(await read(step.value))
  return step.value
}
