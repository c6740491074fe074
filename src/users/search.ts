import type { Cursor } from './cursor'
import { emailKey, type User, type UserFilters } from './records'
import { foldForSearch } from './search-key'

/** The longest `q` (a substring of name or email) a search takes. */
export const MAX_QUERY_LENGTH = 200

export interface SearchRequest {
  limit: number
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
 * One read the v2 list asks of the database, over the request's filters, ids ascending unless
 * said otherwise: how many users match; a page from an offset; the page after (or before, the
 * nearest first) an id; whether any user lies before or after an id.
 */
export type SearchStep =
  | { kind: 'count' }
  | { kind: 'fromOffset'; offset: number; limit: number }
  | { kind: 'after'; id: number; limit: number }
  | { kind: 'before'; id: number; limit: number }
  | { kind: 'exists'; side: 'before' | 'after'; id: number }

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
  const { limit, cursor } = request
  const total = request.counted ? ((yield { kind: 'count' }) as number) : null
  if (cursor === undefined) {
    const rows = (yield { kind: 'fromOffset', offset: request.offset, limit: limit + 1 }) as User[]
    const data = rows.slice(0, limit)
    const last = data.at(-1)
    return {
      data,
      total,
      offset: request.offset,
      next: rows.length > limit && last ? { direction: 'after', id: last.id } : null,
      prev: request.offset > 0 ? { offset: Math.max(0, request.offset - limit) } : null,
    }
  }
  const forward = cursor.direction === 'after'
  const rows = (yield {
    kind: forward ? 'after' : 'before',
    id: cursor.id,
    limit: limit + 1,
  }) as User[]
  const more = rows.length > limit
  const data = forward ? rows.slice(0, limit) : rows.slice(0, limit).reverse()
  const first = data[0]?.id ?? (forward ? cursor.id + 1 : cursor.id)
  const last = data.at(-1)?.id ?? (forward ? cursor.id : cursor.id - 1)
  const hasBefore = forward
    ? ((yield { kind: 'exists', side: 'before', id: first }) as boolean)
    : more
  const hasAfter = forward ? more : ((yield { kind: 'exists', side: 'after', id: last }) as boolean)
  return {
    data,
    total,
    offset: null,
    next: hasAfter ? { direction: 'after', id: last } : null,
    prev: hasBefore ? { direction: 'before', id: first } : null,
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
