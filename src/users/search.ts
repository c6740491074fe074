import type { Database } from 'bun:sqlite'
import type { Cursor } from './cursor'
import { emailKey, type UserFilters, VIEW_COLUMNS } from './records'
import type { User } from './schema'

export interface SearchRequest {
  limit: number
  /** Ignored when a cursor is given. */
  offset: number
  cursor?: Cursor
  filters: UserFilters
}

export interface SearchResult {
  data: User[]
  total: number
  /** The page's offset; null for a page chosen by cursor, whose position is not counted. */
  offset: number | null
  /** The cursor of the next page, or null on the last page. */
  next: Cursor | null
  /** How to reach the previous page: a cursor, an offset, or null on the first page. */
  prev: Cursor | { offset: number } | null
}

/**
 * The v2 list's statements, one per combination of filters and direction, prepared on first
 * use and kept. A keyset page reads from the primary key in its direction and never counts the
 * rows before it, so a deep page costs what the first one does; whether a page exists beyond
 * it on the other side is a one-row probe.
 */
export class FilteredQueries {
  private readonly statements = new Map<string, Statement>()

  constructor(private readonly sqlite: Database) {}

  search(request: SearchRequest): SearchResult {
    const { filters, limit, cursor } = request
    const where = whereClause(filters)
    const params = filterParams(filters)
    const total =
      this.all<{ n: number }>(`SELECT count(*) AS n FROM users${where.where}`, params)[0]?.n ?? 0
    if (cursor === undefined) {
      const rows = this.all<User>(
        `SELECT ${VIEW_COLUMNS} FROM users${where.where} ORDER BY id LIMIT $limit OFFSET $offset`,
        { ...params, limit: limit + 1, offset: request.offset },
      )
      const data = rows.slice(0, limit)
      const last = data.at(-1)
      const prev = request.offset > 0 ? { offset: Math.max(0, request.offset - limit) } : null
      const next = rows.length > limit && last ? { direction: 'after' as const, id: last.id } : null
      return { data, total, offset: request.offset, next, prev }
    }
    const forward = cursor.direction === 'after'
    const rows = this.all<User>(
      forward
        ? `SELECT ${VIEW_COLUMNS} FROM users WHERE id > $at${where.and} ORDER BY id LIMIT $limit`
        : `SELECT ${VIEW_COLUMNS} FROM users WHERE id < $at${where.and} ORDER BY id DESC LIMIT $limit`,
      { ...params, at: cursor.id, limit: limit + 1 },
    )
    const more = rows.length > limit
    const data = forward ? rows.slice(0, limit) : rows.slice(0, limit).reverse()
    const first = data[0]?.id ?? (forward ? cursor.id + 1 : cursor.id)
    const last = data.at(-1)?.id ?? (forward ? cursor.id : cursor.id - 1)
    const hasBefore = forward ? this.exists(where, params, 'id < $at', first) : more
    const hasAfter = forward ? more : this.exists(where, params, 'id > $at', last)
    return {
      data,
      total,
      offset: null,
      next: hasAfter ? { direction: 'after', id: last } : null,
      prev: hasBefore ? { direction: 'before', id: first } : null,
    }
  }

  private exists(
    where: { and: string },
    params: Record<string, string>,
    condition: string,
    at: number,
  ): boolean {
    const sql = `SELECT 1 AS found FROM users WHERE ${condition}${where.and} LIMIT 1`
    return this.all(sql, { ...params, at }).length > 0
  }

  private all<T>(text: string, params: Record<string, string | number>): T[] {
    let statement = this.statements.get(text)
    if (statement === undefined) {
      statement = this.sqlite.query(text)
      this.statements.set(text, statement)
    }
    return statement.all(params as never) as T[]
  }
}

type Statement = ReturnType<Database['query']>

function whereClause(filters: UserFilters): { where: string; and: string } {
  const conditions: string[] = []
  if (filters.email !== undefined) conditions.push('email_key = $emailKey')
  if (filters.q !== undefined) {
    conditions.push("(name LIKE $pattern ESCAPE '\\' OR email LIKE $pattern ESCAPE '\\')")
  }
  const joined = conditions.join(' AND ')
  return joined === ''
    ? { where: '', and: '' }
    : { where: ` WHERE ${joined}`, and: ` AND ${joined}` }
}

function filterParams(filters: UserFilters): Record<string, string> {
  const values: Record<string, string> = {}
  if (filters.email !== undefined) values.emailKey = emailKey(filters.email)
  if (filters.q !== undefined) values.pattern = `%${filters.q.replace(/[\\%_]/g, '\\$&')}%`
  return values
}
