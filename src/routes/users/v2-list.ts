import type { Context } from 'elysia'
import { type LinkTargets, lastOffset, linkHeader, readPage } from '../../http/pagination'
import { QueryReader } from '../../http/query'
import { publicBaseUrl } from '../../http/request-context'
import { readCursor, writeCursor } from '../../users/cursor'
import { MAX_EMAIL_LENGTH } from '../../users/fields'
import { MAX_QUERY_LENGTH, type SearchResult, SORT_CHOICES } from '../../users/search'
import type { UserStore } from '../../users/store'

/**
 * GET /v2/users: v1's offset pages plus keyset cursors, the email and q filters and a sort;
 * the Link header keeps the filters and the sort and uses offsets where the position is known,
 * cursors where not.
 */
export async function v2Page(
  request: Request,
  set: Context['set'],
  options: { users: UserStore; path: string; publicUrl: string | null },
) {
  const { users, path: listPath, publicUrl } = options
  const query = new QueryReader(request.url)
  const page = readPage(query)
  const cursorText = query.string('cursor')
  const cursor = cursorText === undefined ? undefined : (readCursor(cursorText) ?? undefined)
  if (cursorText !== undefined && cursor === undefined) {
    query.reject('cursor', 'is not a cursor this service issued', cursorText)
  }
  if (cursorText !== undefined && query.has('offset')) {
    query.reject('offset', 'cannot be combined with cursor', query.string('offset'))
  }
  const filters = {
    email: query.string('email', { maxLength: MAX_EMAIL_LENGTH }),
    q: query.string('q', { maxLength: MAX_QUERY_LENGTH }),
  }
  const count = query.oneOf('count', COUNT_CHOICES, 'exact')
  const sort = query.oneOf('sort', SORT_CHOICES, 'id')
  if (cursor !== undefined && cursor.sort !== sort && query.isValid('sort')) {
    query.reject('cursor', `was issued for sort=${cursor.sort}; send that sort with it`, cursorText)
  }
  query.assertValid()
  const result = await users.search({ ...page, sort, cursor, filters, counted: count === 'exact' })
  const nextCursor = result.next === null ? null : writeCursor(result.next)
  if (result.total !== null) set.headers['x-total-count'] = String(result.total)
  set.headers.link = linkHeader({
    base: publicBaseUrl(request, publicUrl),
    path: listPath,
    limit: page.limit,
    // Every link asks for what this page asked: an uncounted list stays uncounted.
    keep: {
      ...filters,
      sort: sort === 'id' ? undefined : sort,
      count: count === 'none' ? 'none' : undefined,
    },
    targets: v2Targets(page.limit, result, nextCursor),
  })
  return {
    data: result.data,
    pagination: {
      limit: page.limit,
      offset: result.offset,
      ...(result.total === null ? {} : { total: result.total }),
      next_cursor: nextCursor,
    },
  }
}

/** `count=none` leaves the total out (CONTRACT section 2); `exact`, the default, counts. */
export const COUNT_CHOICES = ['exact', 'none'] as const

/** Links for a v2 page: offsets where the position is known, cursors where it is not. */
function v2Targets(limit: number, result: SearchResult, nextCursor: string | null): LinkTargets {
  const { prev } = result
  return {
    first: { offset: 0 },
    prev: prev === null ? undefined : 'offset' in prev ? prev : { cursor: writeCursor(prev) },
    next: nextCursor === null ? undefined : { cursor: nextCursor },
    // Without a total there is no last page to point at.
    last: result.total === null ? undefined : { offset: lastOffset(result.total, limit) },
  }
}
