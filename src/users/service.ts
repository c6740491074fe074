import { Database } from 'bun:sqlite'
import { eq, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import type { Store } from '../db/client'
import type { PageRequest } from '../db/page'
import { users } from '../db/schema'
import { fieldDetail } from '../errors/details'
import { conflict, notFound, preconditionFailed, validationFailed } from '../errors/errors'
import type { Cursor } from './cursor'
import type { User } from './schema'

/** A user as stored: the public view plus the version its ETag is made from. */
export interface UserRecord extends User {
  version: number
}

export interface NewUser {
  name: string
  email: string
  passwordHash: string | null
}

export interface UserChanges {
  name?: string
  email?: string
  /** A new argon2id hash; undefined leaves the password as it is. */
  passwordHash?: string
}

export interface WriteGuard {
  /** The versions the caller accepts (from If-Match); null when any will do. */
  versions: readonly number[] | null
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

const VIEW_COLUMNS = 'id, name, email, created_at, updated_at'
const RECORD_COLUMNS = `${VIEW_COLUMNS}, version`

// The same columns for drizzle's RETURNING on writes.
const recordColumns = {
  id: users.id,
  name: users.name,
  email: users.email,
  created_at: users.createdAt,
  updated_at: users.updatedAt,
  version: users.version,
}

export type UserService = ReturnType<typeof createUserService>

const EXPORT_SQL =
  'SELECT id, name, email, created_at, updated_at, password_hash FROM users ORDER BY id'

/** A user as `roster users export` writes it. */
export interface ExportedUser {
  id: number
  name: string
  email: string
  created_at: string
  updated_at: string
  password_hash: string | null
}

const ROLLBACK = Symbol('rollback')

/**
 * Users over the database. Every per-request query is prepared once here. Reads use the reader
 * connection (committed data only). `create`, `update` and `remove` go through the group
 * commit and settle once their write is durable; the `inWrite` functions are the same writes
 * for work that already runs inside one (an Idempotency-Key's bookkeeping, a webhook handler),
 * and read on the writer so they see that work's own uncommitted rows.
 */
export function createUserService(
  store: Store,
  now: Clock,
  hooks: { onPasswordChange?: (userId: number) => void } = {},
) {
  const { db, writes } = store
  const sqlite = store.reader
  const writer = db.$client
  // Reads on the request path use bun:sqlite statements directly: drizzle's row mapping made a
  // page of 20 plus its JSON 4.8 µs slower (objects it builds serialize slower). Writes below
  // go through drizzle. Both are prepared once, here.
  const byId = sqlite.query<UserRecord, [number]>(
    `SELECT ${RECORD_COLUMNS} FROM users WHERE id = ?`,
  )
  const currentById = writer.query<UserRecord, [number]>(
    `SELECT ${RECORD_COLUMNS} FROM users WHERE id = ?`,
  )
  const currentByEmailKey = writer.query<{ id: number }, [string]>(
    'SELECT id FROM users WHERE email_key = ?',
  )
  const page = sqlite.query<User, [number, number]>(
    `SELECT ${VIEW_COLUMNS} FROM users ORDER BY id LIMIT ? OFFSET ?`,
  )
  const total = sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM users')
  const byEmailKey = sqlite.query<{ id: number; password_hash: string | null }, [string]>(
    'SELECT id, password_hash FROM users WHERE email_key = ?',
  )
  const withHashById = sqlite.query<UserRecord & { password_hash: string | null }, [number]>(
    `SELECT ${RECORD_COLUMNS}, password_hash FROM users WHERE id = ?`,
  )
  // One read transaction: the page and the total are one snapshot, and WAL bookkeeping is paid once.
  const readPage = sqlite.transaction((request: PageRequest) => ({
    data: page.all(request.limit, request.offset),
    total: total.get()?.n ?? 0,
  }))
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
  const takenKeys = sqlite.query<{ email_key: string }, [string]>(
    'SELECT email_key FROM users WHERE email_key IN (SELECT value FROM json_each(?))',
  )
  const insertPlain = writer.query(
    `INSERT INTO users (name, email, email_key, password_hash, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?5)`,
  )
  const exportRows = sqlite.query<ExportedUser, []>(EXPORT_SQL)
  const filtered = new FilteredQueries(sqlite)
  const readSearch = sqlite.transaction((request: SearchRequest) => filtered.search(request))
  // Nested in a group transaction this is a savepoint; alone (the CLI) it is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()

  function requireGuarded(id: number, guard: WriteGuard): UserRecord {
    const current = currentById.get(id)
    if (current === null) throw notFound('No user with this id')
    if (guard.versions !== null && !guard.versions.includes(current.version)) {
      throw preconditionFailed()
    }
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
    return uniqueEmail(changes.email, () =>
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

  /** The writes, for work already inside a group transaction (see WriteQueue). */
  const inWrite = {
    /** Creates a user; CONFLICT when the email is taken (without regard to case). */
    create(input: NewUser): UserRecord {
      const at = now().toISOString()
      return uniqueEmail(input.email, () =>
        insert.get({
          name: input.name.trim(),
          email: input.email,
          emailKey: emailKey(input.email),
          passwordHash: input.passwordHash,
          at,
        }),
      ) as UserRecord
    },

    /**
     * Applies changes after checking If-Match and echoed fields; NOT_FOUND, PRECONDITION_FAILED,
     * CONFLICT. A new password ends every session and token of the user in the same transaction.
     */
    update(id: number, changes: UserChanges, guard: WriteGuard): UserRecord {
      return transaction(() => {
        requireGuarded(id, guard)
        const updated = writeChanges(id, changes)
        if (changes.passwordHash !== undefined) hooks.onPasswordChange?.(id)
        return updated
      })
    },

    /** Deletes after checking If-Match; NOT_FOUND, PRECONDITION_FAILED. */
    remove(id: number, guard: WriteGuard): void {
      transaction(() => {
        requireGuarded(id, guard)
        remove.run({ id })
      })
    },

    /** The id of the user with this email (without regard to case), seeing uncommitted rows. */
    idByEmail(email: string): number | null {
      return currentByEmailKey.get(emailKey(email))?.id ?? null
    },
  }

  return {
    inWrite,

    create: (input: NewUser): Promise<UserRecord> => writes.run(() => inWrite.create(input)),

    update: (id: number, changes: UserChanges, guard: WriteGuard): Promise<UserRecord> =>
      writes.run(() => inWrite.update(id, changes, guard)),

    remove: (id: number, guard: WriteGuard): Promise<void> =>
      writes.run(() => inWrite.remove(id, guard)),

    get(id: number): UserRecord | null {
      return byId.get(id)
    },

    list(request: PageRequest): { data: User[]; total: number } {
      return readPage(request)
    },

    /** The v2 list: filters, and an offset or a keyset position. See SearchResult. */
    search(request: SearchRequest): SearchResult {
      return readSearch(request)
    },

    /** Which of these emails users already have, as email keys (one query for all). */
    emailsTaken(emails: readonly string[]): Set<string> {
      if (emails.length === 0) return new Set()
      const keys = JSON.stringify(emails.map(emailKey))
      return new Set(takenKeys.all(keys).map((row) => row.email_key))
    },

    /**
     * Every user, for an export over HTTP: read on a connection of its own, inside one read
     * transaction, so the export is one consistent snapshot and requests that run while it
     * streams neither wait for it nor see its snapshot. Closed when the generator ends or is
     * abandoned (`return()`, a client that went away).
     */
    *exportSnapshot(): Generator<ExportedUser> {
      const snapshot = new Database(store.reader.filename, { readonly: true, strict: true })
      try {
        snapshot.run('PRAGMA busy_timeout = 5000')
        snapshot.run('BEGIN')
        yield* snapshot.query<ExportedUser, []>(EXPORT_SQL).iterate()
        snapshot.run('COMMIT')
      } finally {
        snapshot.close()
      }
    },

    /**
     * Every user in id order, password hash included, from one snapshot: the read transaction
     * stays open until the iteration ends (for export; writers are not held up in WAL mode).
     */
    *exportAll(): Generator<ExportedUser> {
      sqlite.run('BEGIN')
      try {
        yield* exportRows.iterate()
      } finally {
        sqlite.run('COMMIT')
      }
    },

    /**
     * Inserts many users in one transaction of their own (one fsync; for the CLI's import,
     * not the request path). A row whose email is taken is
     * reported by index; with `allOrNothing`, any such row rolls the whole batch back.
     */
    insertMany(
      rows: readonly { name: string; email: string; passwordHash: string | null }[],
      options: { allOrNothing: boolean },
    ): { inserted: number; conflicts: number[] } {
      const conflicts: number[] = []
      let inserted = 0
      const at = now().toISOString()
      try {
        transaction(() => {
          rows.forEach((row, index) => {
            try {
              insertPlain.run(row.name.trim(), row.email, emailKey(row.email), row.passwordHash, at)
              inserted += 1
            } catch (error) {
              if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') throw error
              conflicts.push(index)
            }
          })
          if (options.allOrNothing && conflicts.length > 0) throw ROLLBACK
        })
      } catch (error) {
        if (error !== ROLLBACK) throw error
        inserted = 0
      }
      return { inserted, conflicts }
    },

    /** id and password hash by email, compared without regard to case (for sign-in). */
    byEmail(email: string): { id: number; passwordHash: string | null } | null {
      const row = byEmailKey.get(emailKey(email))
      return row === null ? null : { id: row.id, passwordHash: row.password_hash }
    },

    count(): number {
      return total.get()?.n ?? 0
    },

    /** A user's record with its current password hash, in one read (for cached Basic sign-ins). */
    withPasswordHash(userId: number): { user: UserRecord; passwordHash: string | null } | null {
      const row = withHashById.get(userId)
      if (row === null) return null
      const { password_hash: passwordHash, ...user } = row
      return { user, passwordHash }
    },
  }
}

/** The key email uniqueness is decided on: JavaScript lower-casing folds all of Unicode. */
export function emailKey(email: string): string {
  return email.toLowerCase()
}

function uniqueEmail<T>(email: string | undefined, write: () => T): T {
  try {
    return write()
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
      throw conflict('A user with this email already exists', [
        fieldDetail('email', 'is already in use', email),
      ])
    }
    throw error
  }
}

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
class FilteredQueries {
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
