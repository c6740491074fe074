import type { Context } from 'elysia'
import { type LinkTargets, lastOffset, linkHeader, readPage } from '../../http/pagination'
import { QueryReader } from '../../http/query'
import { publicBaseUrl } from '../../http/request-context'
import { readCursor, writeCursor } from '../../users/cursor'
import { MAX_EMAIL_LENGTH } from '../../users/fields'
import { MAX_QUERY_LENGTH, type SearchResult } from '../../users/search'
import type { UserStore } from '../../users/store'

/**
 * GET /v2/users: v1's offset pages plus keyset cursors and the email and q filters; the Link
 * header keeps the filters and uses offsets where the position is known, cursors where not.
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
  query.assertValid()
  const result = await users.search({ ...page, cursor, filters })
  const nextCursor = result.next === null ? null : writeCursor(result.next)
  set.headers['x-total-count'] = String(result.total)
  set.headers.link = linkHeader({
    base: publicBaseUrl(request, publicUrl),
    path: listPath,
    limit: page.limit,
    keep: filters,
    targets: v2Targets(page.limit, result, nextCursor),
  })
  return {
    data: result.data,
    pagination: {
      limit: page.limit,
      offset: result.offset,
      total: result.total,
      next_cursor: nextCursor,
    },
  }
}

/** Links for a v2 page: offsets where the position is known, cursors where it is not. */
function v2Targets(limit: number, result: SearchResult, nextCursor: string | null): LinkTargets {
  const { prev } = result
  return {
    first: { offset: 0 },
    prev: prev === null ? undefined : 'offset' in prev ? prev : { cursor: writeCursor(prev) },
    next: nextCursor === null ? undefined : { cursor: nextCursor },
    last: { offset: lastOffset(result.total, limit) },
  }
}
