import { and, asc, count, eq, gt, lte, type SQL, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import type { Db } from '../db/client'
import { users } from '../db/schema'
import { ifMatchHolds } from '../http/conditional'
import { conflict, notFound, preconditionFailed, validationFailed } from '../http/errors'
import type { PageRequest } from '../http/pagination'
import { fieldDetail } from '../http/validation'
import type { User } from './schema'

/** A user as stored: the public view plus the version its ETag is made from. */
export interface UserRecord extends User {
  version: number
}

export interface UserChanges {
  name?: string
  email?: string
  /** A new argon2id hash; undefined leaves the password as it is. */
  passwordHash?: string
}

export interface WriteGuard {
  /** The request's If-Match header, if any. */
  ifMatch: string | null
  /** Read-only fields echoed back in a PUT body; each must match the record. */
  echo?: { id?: number; created_at?: string; updated_at?: string }
}

export interface UserFilters {
  /** Exact email, compared without regard to case. */
  email?: string
  /** Substring of name or email (ASCII letters compared without regard to case). */
  q?: string
}

export type Clock = () => Date

/** The strong ETag of a record: it changes whenever the record does. */
export const etagOf = (user: UserRecord) => `"${user.id}.${user.version}"`

/** The view of a record that responses carry (no version, no hash). */
export function toView(user: UserRecord): User {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    created_at: user.created_at,
    updated_at: user.updated_at,
  }
}

const viewColumns = {
  id: users.id,
  name: users.name,
  email: users.email,
  created_at: users.createdAt,
  updated_at: users.updatedAt,
}
const recordColumns = { ...viewColumns, version: users.version }

export type UserService = ReturnType<typeof createUserService>

/**
 * Users over the database. Every per-request query is prepared once here; writes run in
 * BEGIN IMMEDIATE transactions so the read-check-write of a guarded update is atomic.
 */
export function createUserService(db: Db, now: Clock) {
  const byId = db
    .select(recordColumns)
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare()
  const page = db
    .select(viewColumns)
    .from(users)
    .orderBy(asc(users.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare()
  const total = db.select({ n: count() }).from(users).prepare()
  const insert = db
    .insert(users)
    .values({
      name: sql.placeholder('name'),
      email: sql.placeholder('email'),
      emailKey: sql.placeholder('emailKey'),
      passwordHash: sql.placeholder('passwordHash'),
      createdAt: sql.placeholder('at'),
      updatedAt: sql.placeholder('at'),
    })
    .returning(recordColumns)
    .prepare()
  // One statement for every update: a null placeholder keeps the column as it is.
  const keep = (column: SQLiteColumn, name: string) =>
    sql`coalesce(${sql.placeholder(name)}, ${column})`
  const update = db
    .update(users)
    .set({
      name: keep(users.name, 'name'),
      email: keep(users.email, 'email'),
      emailKey: keep(users.emailKey, 'emailKey'),
      passwordHash: keep(users.passwordHash, 'passwordHash'),
      version: sql`${users.version} + 1`,
      updatedAt: sql`${sql.placeholder('at')}`,
    })
    .where(eq(users.id, sql.placeholder('id')))
    .returning(recordColumns)
    .prepare()
  const remove = db
    .delete(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare()
  const filtered = new FilteredQueries(db)
  const transaction = <T>(work: () => T): T => db.$client.transaction(work).immediate()

  function requireGuarded(id: number, guard: WriteGuard): UserRecord {
    const current = byId.get({ id })
    if (current === undefined) throw notFound('No user with this id')
    if (!ifMatchHolds(guard.ifMatch, etagOf(current))) throw preconditionFailed()
    const mismatched = Object.entries(guard.echo ?? {}).filter(
      ([field, value]) => value !== undefined && current[field as keyof UserRecord] !== value,
    )
    if (mismatched.length > 0) {
      throw validationFailed(
        mismatched.map(([field, value]) =>
          fieldDetail(field, 'is read-only and does not match the record', value),
        ),
      )
    }
    return current
  }

  function writeChanges(id: number, changes: UserChanges): UserRecord {
    return uniqueEmail(() =>
      update.get({
        id,
        name: changes.name?.trim() ?? null,
        email: changes.email ?? null,
        emailKey: changes.email === undefined ? null : emailKey(changes.email),
        passwordHash: changes.passwordHash ?? null,
        at: now().toISOString(),
      }),
    ) as UserRecord
  }

  return {
    get(id: number): UserRecord | undefined {
      return byId.get({ id })
    },

    list(request: PageRequest): { data: User[]; total: number } {
      return {
        data: page.all({ limit: request.limit, offset: request.offset }),
        total: total.get()?.n ?? 0,
      }
    },

    /**
     * The v2 list: optional filters, and either an offset or a keyset position (`afterId`).
     * Returns the position of the page's first row as `offset`, and the next cursor's id.
     */
    search(request: { limit: number; offset: number; afterId?: number; filters: UserFilters }) {
      const rows = filtered.page(request)
      const hasMore = rows.length > request.limit
      const data = hasMore ? rows.slice(0, request.limit) : rows
      const offset =
        request.afterId === undefined
          ? request.offset
          : filtered.position(request.filters, request.afterId)
      return {
        data,
        offset,
        total: filtered.total(request.filters),
        nextAfterId: hasMore ? (data.at(-1)?.id ?? null) : null,
      }
    },

    /** Creates a user; CONFLICT when the email is taken (without regard to case). */
    create(input: { name: string; email: string; passwordHash: string | null }): UserRecord {
      const at = now().toISOString()
      return uniqueEmail(() =>
        insert.get({
          name: input.name.trim(),
          email: input.email,
          emailKey: emailKey(input.email),
          passwordHash: input.passwordHash,
          at,
        }),
      ) as UserRecord
    },

    /** Applies changes after checking If-Match and echoed fields; NOT_FOUND, PRECONDITION_FAILED, CONFLICT. */
    update(id: number, changes: UserChanges, guard: WriteGuard): UserRecord {
      return transaction(() => {
        requireGuarded(id, guard)
        return writeChanges(id, changes)
      })
    },

    /** Deletes after checking If-Match; NOT_FOUND, PRECONDITION_FAILED. */
    remove(id: number, guard: WriteGuard): void {
      transaction(() => {
        requireGuarded(id, guard)
        remove.run({ id })
      })
    },
  }
}

/** The key email uniqueness is decided on: JavaScript lower-casing folds all of Unicode. */
export function emailKey(email: string): string {
  return email.toLowerCase()
}

function uniqueEmail<T>(write: () => T): T {
  try {
    return write()
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
      throw conflict('A user with this email already exists', [
        { field: 'email', message: 'is already in use' },
      ])
    }
    throw error
  }
}

type FilterKey = 'none' | 'email' | 'q' | 'email+q'

/**
 * The v2 list's statements, one per combination of filters, prepared on first use and kept.
 * Keyset pages (`id > afterId`) read straight from the primary key, so a deep page costs the
 * same as the first.
 */
class FilteredQueries {
  private readonly pages = new Map<string, ReturnType<FilteredQueries['preparePage']>>()
  private readonly counts = new Map<string, ReturnType<FilteredQueries['prepareCount']>>()

  constructor(private readonly db: Db) {}

  page(request: { limit: number; offset: number; afterId?: number; filters: UserFilters }) {
    const keyset = request.afterId !== undefined
    const key = `${filterKey(request.filters)}:${keyset}`
    let statement = this.pages.get(key)
    if (statement === undefined) {
      statement = this.preparePage(request.filters, keyset)
      this.pages.set(key, statement)
    }
    return statement.all({
      ...placeholders(request.filters),
      limit: request.limit + 1,
      offset: keyset ? 0 : request.offset,
      after: request.afterId ?? 0,
    })
  }

  total(filters: UserFilters): number {
    return this.count(filters, false, 0)
  }

  /** How many matching rows come before the one after `afterId`: the keyset page's offset. */
  position(filters: UserFilters, afterId: number): number {
    return this.count(filters, true, afterId)
  }

  private count(filters: UserFilters, upTo: boolean, afterId: number): number {
    const key = `${filterKey(filters)}:${upTo}`
    let statement = this.counts.get(key)
    if (statement === undefined) {
      statement = this.prepareCount(filters, upTo)
      this.counts.set(key, statement)
    }
    return statement.get({ ...placeholders(filters), after: afterId })?.n ?? 0
  }

  private preparePage(filters: UserFilters, keyset: boolean) {
    const conditions = filterConditions(filters)
    if (keyset) conditions.push(gt(users.id, sql.placeholder('after')))
    return this.db
      .select(viewColumns)
      .from(users)
      .where(and(...conditions))
      .orderBy(asc(users.id))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare()
  }

  private prepareCount(filters: UserFilters, upTo: boolean) {
    const conditions = filterConditions(filters)
    if (upTo) conditions.push(lte(users.id, sql.placeholder('after')))
    return this.db
      .select({ n: count() })
      .from(users)
      .where(and(...conditions))
      .prepare()
  }
}

function filterKey(filters: UserFilters): FilterKey {
  if (filters.email !== undefined) return filters.q !== undefined ? 'email+q' : 'email'
  return filters.q !== undefined ? 'q' : 'none'
}

function filterConditions(filters: UserFilters): SQL[] {
  const conditions: SQL[] = []
  if (filters.email !== undefined) conditions.push(eq(users.emailKey, sql.placeholder('emailKey')))
  if (filters.q !== undefined) {
    conditions.push(
      sql`(${users.name} LIKE ${sql.placeholder('pattern')} ESCAPE '\\' OR ${users.email} LIKE ${sql.placeholder('pattern')} ESCAPE '\\')`,
    )
  }
  return conditions
}

function placeholders(filters: UserFilters): Record<string, string> {
  const values: Record<string, string> = {}
  if (filters.email !== undefined) values.emailKey = emailKey(filters.email)
  if (filters.q !== undefined) values.pattern = `%${filters.q.replace(/[\\%_]/g, '\\$&')}%`
  return values
}
