import type { SQL } from 'bun'
import { fieldDetail } from '../../errors/details'
import { conflict } from '../../errors/errors'
import {
  type Clock,
  checkGuard,
  EXPORT_SQL,
  type ExportedUser,
  emailKey,
  type GuardedRow,
  type NewUser,
  type UserChanges,
  type UserRecord,
  type WriteGuard,
} from '../../users/records'
import type { User } from '../../users/schema'
import type { SearchRequest, SearchResult } from '../../users/search'
import type { UserStore, UserWrites } from '../../users/store'
import { countOf } from './page'
import { lookupText } from './text'
import { type Stored, withIsoTimestamps } from './timestamps'

/** A PostgreSQL connection to run statements on: the pool, or one transaction's connection. */
export type Queries = SQL

const UNIQUE_VIOLATION = '23505'
const EXPORT_BATCH = 1000

// Ids are `integer` columns; a client's id (up to 2^53-1) is compared as int8, so one beyond
// 2^31-1 finds nothing instead of failing the statement.

/**
 * The users' writes on PostgreSQL, over `q`: the pool (each write its own transaction) or a
 * unit of work's transaction. Several instances write at once, so If-Match is a
 * compare-and-set: the row is locked (`FOR UPDATE`) in the write's transaction and its version
 * checked there; a concurrent write with the same If-Match waits for the lock, then finds the
 * new version (412). Email uniqueness is the unique index on the folded email (409).
 */
export function createPgUserWrites(
  q: Queries,
  now: Clock,
  /** Runs work in a transaction: `q.begin` on the pool, the work itself inside a unit. */
  inTransaction: <T>(work: (tx: Queries) => Promise<T>) => Promise<T>,
): UserWrites {
  async function lockGuarded(tx: Queries, id: number, guard: WriteGuard): Promise<UserRecord> {
    const [current] = await tx<Stored<GuardedRow>[]>`
      SELECT id, name, email, created_at, updated_at, version,
             password_hash IS NOT NULL AS can_sign_in
      FROM users WHERE id = ${id}::int8 FOR UPDATE`
    return checkGuard(current && withIsoTimestamps(current), guard)
  }

  return {
    async create(input: NewUser): Promise<UserRecord> {
      const at = now().toISOString()
      const [created] = await uniqueEmail(
        input.email,
        q<Stored<UserRecord>[]>`
          INSERT INTO users (name, email, email_key, password_hash, created_at, updated_at)
          VALUES (${input.name.trim()}, ${input.email}, ${emailKey(input.email)},
                  ${input.passwordHash}, ${at}, ${at})
          RETURNING id, name, email, created_at, updated_at, version`,
      )
      return withIsoTimestamps(created as Stored<UserRecord>)
    },

    update(id: number, changes: UserChanges, guard: WriteGuard): Promise<UserRecord> {
      return inTransaction(async (tx) => {
        await lockGuarded(tx, id, guard)
        const email = changes.email ?? null
        const [updated] = await uniqueEmail(
          changes.email,
          tx<Stored<UserRecord>[]>`
            UPDATE users SET
              name = coalesce(${changes.name?.trim() ?? null}::text, name),
              email = coalesce(${email}::text, email),
              email_key = coalesce(${email === null ? null : emailKey(email)}::text, email_key),
              password_hash = coalesce(${changes.passwordHash ?? null}::text, password_hash),
              version = version + 1,
              updated_at = ${now().toISOString()}
            WHERE id = ${id}::int8
            RETURNING id, name, email, created_at, updated_at, version`,
        )
        if (changes.passwordHash !== undefined) {
          // A new password ends every session and token, in the same transaction.
          await tx`DELETE FROM sessions WHERE user_id = ${id}`
          await tx`DELETE FROM access_tokens WHERE user_id = ${id}`
        }
        return withIsoTimestamps(updated as Stored<UserRecord>)
      })
    },

    remove(id: number, guard: WriteGuard): Promise<void> {
      return inTransaction(async (tx) => {
        await lockGuarded(tx, id, guard)
        await tx`DELETE FROM users WHERE id = ${id}::int8`
      })
    },

    async idByEmail(email: string): Promise<number | null> {
      const [row] = await q<
        { id: number }[]
      >`SELECT id FROM users WHERE email_key = ${emailKey(email)}`
      return row?.id ?? null
    },
  }
}

/** Users in PostgreSQL: the writes above over the pool, and the reads. */
export function createPgUserStore(
  pool: SQL,
  now: Clock,
): UserStore & {
  /** The writes as a unit of work's transaction sees them. */
  inUnit(tx: Queries): UserWrites
} {
  const writes = createPgUserWrites(pool, now, (work) => pool.begin(work))
  return {
    ...writes,
    inUnit: (tx) => createPgUserWrites(tx, now, (work) => work(tx)),

    async get(id) {
      const [row] = await pool<Stored<UserRecord>[]>`
        SELECT id, name, email, created_at, updated_at, version FROM users WHERE id = ${id}::int8`
      return row === undefined ? null : withIsoTimestamps(row)
    },

    async list(request) {
      // One statement, so the page and the total are one snapshot; the total's row is there
      // even when the page is empty.
      const rows = await pool<(Stored<User> & { total: string })[]>`
        WITH counted AS (SELECT count(*) AS total FROM users)
        SELECT page.*, counted.total FROM counted LEFT JOIN LATERAL (
          SELECT id, name, email, created_at, updated_at FROM users
          ORDER BY id LIMIT ${request.limit} OFFSET ${request.offset}
        ) page ON true`
      const total = Number(rows[0]?.total ?? 0)
      const data = rows
        .filter((row) => row.id !== null)
        .map(({ id, name, email, created_at, updated_at }) => ({
          id,
          name,
          email,
          created_at: created_at.toISOString(),
          updated_at: updated_at.toISOString(),
        }))
      return { data, total }
    },

    search(request) {
      return searchUsers(pool, request)
    },

    count: () => countOf(pool`SELECT count(*)::int AS n FROM users`),

    async byEmail(email) {
      const [row] = await pool<{ id: number; password_hash: string | null }[]>`
        SELECT id, password_hash FROM users WHERE email_key = ${lookupText(emailKey(email))}`
      return row === undefined ? null : { id: row.id, passwordHash: row.password_hash }
    },

    async withPasswordHash(userId) {
      const [row] = await pool<(Stored<UserRecord> & { password_hash: string | null })[]>`
        SELECT id, name, email, created_at, updated_at, version, password_hash
        FROM users WHERE id = ${userId}::int8`
      if (row === undefined) return null
      const { password_hash: passwordHash, ...user } = row
      return { user: withIsoTimestamps<UserRecord>(user), passwordHash }
    },

    async replacePasswordHash(userId, expected, replacement) {
      await pool`
        UPDATE users SET password_hash = ${replacement}
        WHERE id = ${userId}::int8 AND password_hash = ${expected}`
    },

    async emailsTaken(emails) {
      const keys = emails.map(emailKey)
      const rows = await pool<{ email_key: string }[]>`
        SELECT email_key FROM users WHERE email_key = ANY(${keys}::text[])`
      return new Set(rows.map((row) => row.email_key))
    },

    exportAll() {
      return exportBatches(pool)
    },

    async insertMany(rows, options) {
      return await pool
        .begin(async (tx) => {
          const conflicts: number[] = []
          let inserted = 0
          const at = now().toISOString()
          for (const [index, row] of rows.entries()) {
            const result = await tx`
            INSERT INTO users (name, email, email_key, password_hash, created_at, updated_at)
            VALUES (${row.name.trim()}, ${row.email}, ${emailKey(row.email)},
                    ${row.passwordHash}, ${at}, ${at})
            ON CONFLICT (email_key) DO NOTHING`
            if (result.count === 1) inserted++
            else conflicts.push(index)
          }
          if (options.allOrNothing && conflicts.length > 0) {
            // Rolls the batch back: begin() rolls back on a throw, and the caller gets the count.
            throw new RolledBack(conflicts)
          }
          return { inserted, conflicts }
        })
        .catch((error: unknown) => {
          if (error instanceof RolledBack) return { inserted: 0, conflicts: error.conflicts }
          throw error
        })
    },
  }
}

/**
 * The v2 list on PostgreSQL: the same pages as `FilteredQueries` (users/search.ts) on SQLite,
 * from one snapshot (a REPEATABLE READ transaction for the count and the page).
 */
function searchUsers(pool: SQL, request: SearchRequest): Promise<SearchResult> {
  const { filters, limit, cursor } = request
  const conditions: string[] = []
  const params: (string | number)[] = []
  const bind = (value: string | number) => `$${params.push(value)}`
  if (filters.email !== undefined)
    conditions.push(`email_key = ${bind(lookupText(emailKey(filters.email)))}`)
  if (filters.q !== undefined) {
    // SQLite's LIKE folds ASCII letters only; ILIKE in the database's collation.
    const pattern = bind(lookupText(`%${filters.q.replace(/[\\%_]/g, '\\$&')}%`))
    conditions.push(`(name ILIKE ${pattern} OR email ILIKE ${pattern})`)
  }
  const and = conditions.map((condition) => ` AND ${condition}`).join('')
  const columns = 'id, name, email, created_at, updated_at'
  return pool.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
    const all = <T>(text: string, extra: (string | number)[] = []) =>
      tx.unsafe<T[]>(text, [...params, ...extra])
    const next = () => `$${params.length + 1}`
    const [counted] = await all<{ n: number }>(
      `SELECT count(*)::int AS n FROM users WHERE true${and}`,
    )
    const total = counted?.n ?? 0
    if (cursor === undefined) {
      const rows = await all<Stored<User>>(
        `SELECT ${columns} FROM users WHERE true${and} ORDER BY id LIMIT ${limit + 1} OFFSET ${request.offset}`,
      )
      const data = rows.slice(0, limit).map(withIsoTimestamps<User>)
      const last = data.at(-1)
      return {
        data,
        total,
        offset: request.offset,
        next: rows.length > limit && last ? { direction: 'after' as const, id: last.id } : null,
        prev: request.offset > 0 ? { offset: Math.max(0, request.offset - limit) } : null,
      }
    }
    const forward = cursor.direction === 'after'
    const rows = await all<Stored<User>>(
      forward
        ? `SELECT ${columns} FROM users WHERE id > ${next()}::int8${and} ORDER BY id LIMIT ${limit + 1}`
        : `SELECT ${columns} FROM users WHERE id < ${next()}::int8${and} ORDER BY id DESC LIMIT ${limit + 1}`,
      [cursor.id],
    )
    const more = rows.length > limit
    const page = rows.slice(0, limit).map(withIsoTimestamps<User>)
    const data = forward ? page : page.reverse()
    const first = data[0]?.id ?? (forward ? cursor.id + 1 : cursor.id)
    const last = data.at(-1)?.id ?? (forward ? cursor.id : cursor.id - 1)
    const exists = async (comparison: '<' | '>', at: number) =>
      (await all(`SELECT 1 FROM users WHERE id ${comparison} ${next()}${and} LIMIT 1`, [at]))
        .length > 0
    const hasBefore = forward ? await exists('<', first) : more
    const hasAfter = forward ? more : await exists('>', last)
    return {
      data,
      total,
      offset: null,
      next: hasAfter ? { direction: 'after' as const, id: last } : null,
      prev: hasBefore ? { direction: 'before' as const, id: first } : null,
    }
  })
}

class RolledBack extends Error {
  constructor(readonly conflicts: number[]) {
    super('rolled back')
  }
}

/** Every user in id order from one REPEATABLE READ snapshot, a batch at a time. */
async function* exportBatches(pool: SQL): AsyncIterable<readonly ExportedUser[]> {
  const reserved = await pool.reserve()
  try {
    await reserved`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
    let after = 0
    const base = EXPORT_SQL.replace(' ORDER BY id', '')
    for (;;) {
      const batch = await reserved.unsafe<Stored<ExportedUser>[]>(
        `${base} WHERE id > $1 ORDER BY id LIMIT ${EXPORT_BATCH}`,
        [after],
      )
      if (batch.length === 0) break
      yield batch.map(withIsoTimestamps<ExportedUser>)
      after = (batch.at(-1) as Stored<ExportedUser>).id
    }
  } finally {
    await reserved`ROLLBACK`.catch(() => {})
    reserved.release()
  }
}

/** A unique violation on the folded email is CONFLICT. */
async function uniqueEmail<T>(email: string | undefined, write: Promise<T>): Promise<T> {
  try {
    return await write
  } catch (error) {
    if ((error as { errno?: string }).errno === UNIQUE_VIOLATION) {
      throw conflict('A user with this email already exists', [
        fieldDetail('email', 'is already in use', email),
      ])
    }
    throw error
  }
}
