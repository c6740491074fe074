import type { Database } from 'bun:sqlite'
import type { Role } from '../../auth/access'
import type { PageRequest } from '../../db/page'
import {
  type Clock,
  checkGuard,
  emailKey,
  type GuardedRow,
  type NewUser,
  type StoredUser,
  type User,
  type UserChanges,
  type UserRecord,
  usernameKey,
  type WriteGuard,
} from '../../users/records'
import {
  INDEXED_QUERY_LENGTH,
  keysetOrder,
  likePattern,
  type Position,
  runSearch,
  type SearchFilters,
  type SearchStep,
  type StepAnswer,
  searchFilters,
  sortKeyOf,
  type UserSort,
} from '../../users/search'
import { searchKeyOf } from '../../users/search-key'
import type { SignInRow, UserRows, UserWriteRows } from '../../users/store'
import type { Store } from './connection'
import { neutralUnique } from './errors'
import { firstUse } from './first-use'
import { membersByOwner, membersOfOne } from './groups'
import { nameOrderArms, nameOrderPage } from './name-order'
import { settle } from './settle'
import { createSqliteUserBulk } from './users-bulk'

// A username is the email until set (coalesce: a row another tool inserted without one).
const VIEW_COLUMNS =
  'id, name, email, coalesce(username, email) AS username, active, created_at, updated_at, role, email_verified_at'
const RECORD_COLUMNS = `${VIEW_COLUMNS}, version`
const GROUPS_JSON = `(SELECT json_group_array(group_id) FROM
  (SELECT group_id FROM group_members WHERE user_id = users.id ORDER BY group_id)) AS groups`

/**
 * Users in SQLite. Every per-request query is prepared once here. Reads use the reader
 * connection (committed data only). Writes go through the group commit and settle once
 * durable; `inUnit` holds the same writes for a unit of work, which already runs inside it:
 * they read on the writer, so they see the unit's own uncommitted rows. With one writer,
 * If-Match's compare-and-set is a read and a write in one savepoint.
 */
export function createSqliteUserRows(
  store: Store,
  now: Clock,
): UserRows & { readonly inUnit: UserWriteRows } {
  const { db, writes } = store
  const sqlite = store.reader
  const writer = db.$client
  // Reads on the request path use bun:sqlite statements directly: drizzle's row mapping made a
  // page of 20 plus its JSON 4.8 µs slower (objects it builds serialize slower). So do a
  // user's insert and update; the rarer writes go through drizzle. All are prepared once, here.
  // One user with its groups in one statement (a JSON array, in id order from the index).
  const byId = sqlite.query<RecordRow & { groups: string }, [number]>(
    `SELECT ${RECORD_COLUMNS}, ${GROUPS_JSON} FROM users WHERE id = ?`,
  )
  // A page's users' groups in one more statement, not one per user.
  const groupsOfPage = membersByOwner(sqlite, 'user_id')
  const currentGroups = membersOfOne(writer, 'user_id')
  const currentById = writer.query<GuardedRow, [number]>(
    `SELECT ${RECORD_COLUMNS}, (password_hash IS NOT NULL
      OR EXISTS (SELECT 1 FROM passkeys k WHERE k.user_id = users.id)) AS can_sign_in FROM users WHERE id = ?`,
  )
  const namesById = writer.query<{ email: string; username: string }, [number]>(
    'SELECT email, coalesce(username, email) AS username FROM users WHERE id = ?',
  )
  const roleById = writer.query<{ role: Role }, [number]>('SELECT role FROM users WHERE id = ?')
  // The partial index users_username_key_unique serves the first (its WHERE is the same).
  const usernameTaken = writer.query<{ taken: number }, [string, number | null]>(
    'SELECT 1 AS taken FROM users WHERE username_key = ?1 AND username_key <> email_key AND (?2 IS NULL OR id <> ?2) LIMIT 1',
  )
  const nameTaken = writer.query<{ taken: number }, [string, number | null]>(
    `SELECT 1 AS taken FROM users WHERE (email_key = ?1 OR (username_key = ?1 AND username_key <> email_key))
       AND (?2 IS NULL OR id <> ?2) LIMIT 1`,
  )
  const otherActiveAdmins = writer.query<{ n: number }, [number]>(
    "SELECT count(*) AS n FROM users WHERE role = 'admin' AND active AND id <> ?",
  )
  const currentByEmailKey = writer.query<{ id: number }, [string]>(
    'SELECT id FROM users WHERE email_key = ?',
  )
  const page = sqlite.query<User, [number, number]>(
    `SELECT ${VIEW_COLUMNS} FROM users ORDER BY id LIMIT ? OFFSET ?`,
  )
  const total = sqlite.query<{ n: number }, []>(USER_COUNT)
  const SIGN_IN_COLUMNS = `id, email, password_hash, role, email_verified_at IS NOT NULL AS verified, active, ${SECOND_FACTOR}`
  const byEmailKey = sqlite.query<SignInColumns, [string]>(
    `SELECT ${SIGN_IN_COLUMNS} FROM users WHERE email_key = ?`,
  )
  const byUsernameKey = sqlite.query<SignInColumns, [string]>(
    `SELECT ${SIGN_IN_COLUMNS} FROM users WHERE username_key = ?`,
  )
  const verify = writer.query<RecordRow, [string, number, string]>(
    `UPDATE users SET email_verified_at = ?1, version = version + 1, updated_at = ?1
     WHERE id = ?2 AND email_key = ?3 RETURNING ${RECORD_COLUMNS}`,
  )
  const verifiedAt = writer.query<{ at: string | null }, [number]>(
    'SELECT email_verified_at AS at FROM users WHERE id = ?',
  )
  const replaceHash = writer.query(
    'UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?',
  )
  const withHashById = sqlite.query<
    RecordRow & {
      groups: string
      password_hash: string | null
      second_factor: number
    },
    [number]
  >(
    `SELECT ${RECORD_COLUMNS}, password_hash, ${SECOND_FACTOR}, ${GROUPS_JSON} FROM users WHERE id = ?`,
  )
  /** Rows of a page with their groups, read in the same snapshot. */
  const withGroupsOf = (rows: Omit<User, 'groups'>[]): User[] => {
    const found = groupsOfPage(rows.map((row) => row.id))
    // Set on the rows bun:sqlite made, not copied: a copy per row cost more than the read.
    // SQLite keeps `active` as 0 or 1.
    for (const row of rows as User[]) {
      row.groups = found.get(row.id) ?? []
      row.active = (row.active as unknown) === 1
    }
    return rows as User[]
  }
  // One snapshot: the page and the total agree, and SQLite's read lock is taken once (or not at
  // all, when this turn's reads already hold it: turn-reads.ts's `snapshots`).
  const readPage = store.snapshot((request: PageRequest) => ({
    data: withGroupsOf(page.all(request.limit, request.offset)),
    total: total.get()?.n ?? 0,
  }))
  // Raw, as the reads are: drizzle's placeholders and row mapping were a tenth of a POST's
  // CPU beside the INSERT itself.
  const insert = firstUse(() =>
    writer.prepare<
      RecordRow,
      [string, string, string, string, string, number, string | null, Role, string, string]
    >(
      `INSERT INTO users (name, email, email_key, username, username_key, active, password_hash,
         role, search_key, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) RETURNING ${RECORD_COLUMNS}`,
    ),
  )
  /**
   * One statement per set of fields an update changes, prepared on first use: a column left
   * out of SET costs nothing, and a unique index's column in SET (email_key, username_key) is
   * rewritten in its index even when its value stays (measured: PATCH of a name at 1.17x the
   * CPU when every update set every column).
   */
  const updates = new Map<number, ReturnType<typeof prepareUpdate>>()
  // Raw like the insert; the parameters are numbered so that every statement takes the same
  // eleven values, whichever columns its SET names.
  const prepareUpdate = (fields: UpdatedFields) =>
    writer.prepare<RecordRow, UpdateValues>(
      `UPDATE users SET ${[
        ...(fields.name ? ['name = ?2'] : []),
        ...(fields.name || fields.email ? ['search_key = ?10'] : []),
        // A new address is not verified yet (the email-change flow verifies it after).
        ...(fields.email
          ? [
              'email = ?3',
              'email_key = ?4',
              'email_verified_at = CASE WHEN ?4 <> email_key THEN NULL ELSE email_verified_at END',
            ]
          : []),
        ...(fields.username ? ['username = ?5', 'username_key = ?6'] : []),
        ...(fields.passwordHash ? ['password_hash = ?7'] : []),
        ...(fields.role ? ['role = ?8'] : []),
        ...(fields.active ? ['active = ?9'] : []),
        'version = version + 1',
        'updated_at = ?11',
      ].join(', ')} WHERE id = ?1 RETURNING ${RECORD_COLUMNS}`,
    )
  const update = (changes: UserChanges) => {
    const fields: UpdatedFields = {
      name: changes.name !== undefined,
      email: changes.email !== undefined,
      username: changes.username !== undefined,
      passwordHash: changes.passwordHash !== undefined,
      role: changes.role !== undefined,
      active: changes.active !== undefined,
    }
    const key = Object.values(fields).reduce((bits, on, index) => bits | (on ? 1 << index : 0), 0)
    let statement = updates.get(key)
    if (statement === undefined) {
      statement = prepareUpdate(fields)
      updates.set(key, statement)
    }
    return statement
  }
  const removeById = firstUse(() =>
    writer.prepare<unknown, [number]>('DELETE FROM users WHERE id = ?'),
  )
  const searches = new SearchStatements(sqlite)
  const readSearch = store.snapshot((request: Parameters<UserRows['search']>[0]) => {
    const filters = searchFilters(request.filters)
    const result = runSearch(request, (step) => searches.read(filters, request.sort, step))
    return { ...result, data: withGroupsOf(result.data) }
  })
  /**
   * The writes, synchronous, for work already inside a group transaction (see WriteQueue),
   * each in its write's savepoint there: a guard's read and the write it guards are one
   * atomic step on the one writer without a savepoint of their own (one cost 4 % of a PATCH).
   */
  const inWrite = {
    insert(input: NewUser): UserRecord {
      const created = neutralUnique(() =>
        insert().get(
          input.name.trim(),
          input.email,
          emailKey(input.email),
          input.username ?? input.email,
          usernameKey(input.username ?? input.email),
          input.active === false ? 0 : 1,
          input.passwordHash,
          input.role ?? 'member',
          searchKeyOf(input.name, input.email),
          now().toISOString(),
        ),
      )
      if (created === null) throw new Error('INSERT … RETURNING gave no row')
      return recordOf(created, [])
    },

    update(
      id: number,
      changes: UserChanges,
      guard: WriteGuard,
    ): { before: StoredUser; after: UserRecord } {
      const before = checkGuard(guardedRow(currentById.get(id)), guard)
      const updated = neutralUnique(() =>
        update(changes).get(
          id,
          changes.name?.trim() ?? null,
          changes.email ?? null,
          changes.email === undefined ? null : emailKey(changes.email),
          changes.username ?? null,
          changes.username === undefined ? null : usernameKey(changes.username),
          changes.passwordHash ?? null,
          changes.role ?? null,
          changes.active === undefined ? null : changes.active ? 1 : 0,
          searchKeyOf(changes.name ?? before.name, changes.email ?? before.email),
          now().toISOString(),
        ),
      )
      if (updated === null) throw new Error('UPDATE … RETURNING gave no row')
      const groups = currentGroups.all(id).map((row) => row.other)
      return { before, after: recordOf(updated, groups) }
    },

    verifyEmail(
      id: number,
      email: string,
    ): { user: UserRecord; wasVerifiedAt: string | null } | null {
      // One writer: the value read here is the one the update replaces.
      const wasVerifiedAt = verifiedAt.get(id)?.at ?? null
      const verified = verify.get(now().toISOString(), id, emailKey(email))
      if (verified === null) return null
      const groups = currentGroups.all(id).map((row) => row.other)
      return { user: recordOf(verified, groups), wasVerifiedAt }
    },

    remove(id: number, guard: WriteGuard): StoredUser {
      const removed = checkGuard(guardedRow(currentById.get(id)), guard)
      removeById().run(id)
      return removed
    },
  }

  // One writer: a unit's role changes are already serialised, and read on the writer.
  const roles = {
    lockRoles: () => Promise.resolve(),
    lockRole: (id: number) => settle(() => roleById.get(id)?.role ?? null),
    lockSignInNames: (id: number) => settle(() => namesById.get(id) ?? null),
    countOtherActiveAdmins: (id: number) => settle(() => otherActiveAdmins.get(id)?.n ?? 0),
    // One writer: a unit's reads and writes cannot interleave with another's.
    claimSignInNames: () => settle(() => undefined),
    signInNameTaken: (key: string, exceptId: number | null, usernamesOnly: boolean) =>
      settle(() => (usernamesOnly ? usernameTaken : nameTaken).get(key, exceptId) !== null),
  }

  return {
    ...roles,
    inUnit: {
      ...roles,
      insert: (input) => settle(() => inWrite.insert(input)),
      update: (id, changes, guard) => settle(() => inWrite.update(id, changes, guard)),
      remove: (id, guard) => settle(() => inWrite.remove(id, guard)),
      verifyEmail: (id, email) => settle(() => inWrite.verifyEmail(id, email)),
      idByEmailKey: (key) => settle(() => currentByEmailKey.get(key)?.id ?? null),
    },
    insert: (input) => writes.run(() => inWrite.insert(input)),
    update: (id, changes, guard) => writes.run(() => inWrite.update(id, changes, guard)),
    remove: (id, guard) => writes.run(() => inWrite.remove(id, guard)),
    verifyEmail: (id, email) => writes.run(() => inWrite.verifyEmail(id, email)),
    idByEmailKey: (key) => settle(() => byEmailKey.get(key)?.id ?? null),
    get: (id) =>
      settle(() => {
        const row = byId.get(id)
        return row === null ? null : recordOf(row, JSON.parse(row.groups) as number[])
      }),
    page: (request) => settle(() => readPage(request)),
    search: (request) => settle(() => readSearch(request)),
    count: () => settle(() => total.get()?.n ?? 0),
    byEmailKey: (key) => settle(() => signInRow(byEmailKey.get(key))),
    byUsernameKey: (key) => settle(() => signInRow(byUsernameKey.get(key))),
    withPasswordHash: (userId) =>
      settle(() => {
        const row = withHashById.get(userId)
        if (row === null) return null
        const { password_hash: passwordHash, second_factor, groups, ...user } = row
        return {
          user: recordOf(user, JSON.parse(groups) as number[]),
          passwordHash,
          secondFactor: second_factor === 1,
        }
      }),
    replacePasswordHash: async (userId, expected, replacement) => {
      await writes.run(() => replaceHash.run(replacement, userId, expected))
    },
    ...createSqliteUserBulk(store, now),
  }
}

/** An update's values by number (prepareUpdate): id, then each column it may set, then the time. */
type UpdateValues = [
  id: number,
  name: string | null,
  email: string | null,
  emailKey: string | null,
  username: string | null,
  usernameKey: string | null,
  passwordHash: string | null,
  role: Role | null,
  active: number | null,
  searchKey: string,
  at: string,
]

/** Which of a user's fields an update sets. */
interface UpdatedFields {
  name: boolean
  email: boolean
  username: boolean
  passwordHash: boolean
  role: boolean
  active: boolean
}

/** A user's columns as SQLite gives them back: booleans are 0 and 1. */
type RecordRow = Omit<UserRecord, 'groups' | 'active'> & { active: number }

/** A user's record from its row and its groups' ids, `active` a boolean again. */
function recordOf(row: RecordRow, groups: number[]): UserRecord {
  return { ...row, active: row.active === 1, groups }
}

/** The row a guarded write reads, with `active` a boolean again (SQLite keeps 0 and 1). */
function guardedRow(row: GuardedRow | null): GuardedRow | null {
  return row === null ? null : { ...row, active: (row.active as unknown) === 1 }
}

type Statement = ReturnType<Database['query']>

/**
 * The v2 list's statements, one per combination of filters and read, prepared on first use and
 * kept: the reads users/search.ts's plan asks for.
 */
class SearchStatements {
  private readonly statements = new Map<string, Statement>()

  constructor(private readonly sqlite: Database) {}

  read(filters: SearchFilters, sort: UserSort, step: SearchStep): StepAnswer {
    const { where, and, params } = filterSql(filters)
    // Unfiltered, sort=name reads its kept order; filtered, the matches are found through their
    // own index and sorted, at the cost of the matches, as their count is.
    const nameOrder = sortKeyOf(sort) === 'name' && where === ''
    switch (step.kind) {
      case 'count':
        // Unfiltered: the kept count; filtered: the matches, found through an index.
        return where === ''
          ? (this.all<{ n: number }>(USER_COUNT, {})[0]?.n ?? 0)
          : (this.all<{ n: number }>(`SELECT count(*) AS n FROM users${where}`, params)[0]?.n ?? 0)
      case 'fromOffset':
        if (nameOrder) {
          const { order } = keysetOrder(sort, 'after')
          return this.all<User>(
            nameOrderPage({ columns: VIEW_COLUMNS, comparison: null, order, offset: true }),
            { ...params, limit: step.limit, offset: step.offset },
          )
        }
        return this.all<User>(
          `SELECT ${VIEW_COLUMNS} FROM users${where} ORDER BY ${orderBy(sort, 'after')} LIMIT $limit OFFSET $offset`,
          { ...params, limit: step.limit, offset: step.offset },
        )
      case 'after':
      case 'before': {
        if (nameOrder) {
          const { comparison, order } = keysetOrder(sort, step.kind)
          return this.all<User>(
            nameOrderPage({ columns: VIEW_COLUMNS, comparison, order, offset: false }),
            { ...params, ...positionParams(step.at), limit: step.limit },
          )
        }
        const past = pastPosition(sort, step.kind, step.at)
        return this.all<User>(
          `SELECT ${VIEW_COLUMNS} FROM users WHERE ${past.sql}${and} ORDER BY ${orderBy(sort, step.kind)} LIMIT $limit`,
          { ...params, ...past.params, limit: step.limit },
        )
      }
      case 'exists': {
        if (nameOrder) {
          const { comparison } = keysetOrder(sort, step.side)
          const sql = `SELECT 1 AS found FROM (${nameOrderArms(comparison)}) LIMIT 1`
          return this.all(sql, { ...params, ...positionParams(step.at) }).length > 0
        }
        const past = pastPosition(sort, step.side, step.at)
        const sql = `SELECT 1 AS found FROM users WHERE ${past.sql}${and} LIMIT 1`
        return this.all(sql, { ...params, ...past.params }).length > 0
      }
    }
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

/**
 * The column each order reads from `users` itself, ties by id: `search_key` starts with the
 * folded name (sorted per request: used only for the matches of a filter), `email_key` is the
 * folded email, in order in its unique index, which like every SQLite index ends with the id.
 * SQLite compares text by its bytes, which for UTF-8 is code-point order, as PostgreSQL's "C"
 * collation does. An unfiltered sort=name reads its kept order instead (name-order.ts).
 */
const SORT_COLUMNS = { name: 'search_key', email: 'email_key' } as const

function orderBy(sort: UserSort, side: 'after' | 'before'): string {
  const { order } = keysetOrder(sort, side)
  const key = sortKeyOf(sort)
  return key === null ? `id ${order}` : `${SORT_COLUMNS[key]} ${order}, id ${order}`
}

type Params = Record<string, string | number>

/** The rows after (or before) a position in the sort, as a row-value comparison. */
function pastPosition(
  sort: UserSort,
  side: 'after' | 'before',
  at: Position,
): { sql: string; params: Params } {
  const { comparison } = keysetOrder(sort, side)
  const key = sortKeyOf(sort)
  if (key === null) return { sql: `id ${comparison} $at`, params: { at: at.id } }
  return { sql: `(${SORT_COLUMNS[key]}, id) ${comparison} ($key, $at)`, params: positionParams(at) }
}

/** A position in a sort by a key as the statements' `$at` and `$key`. */
function positionParams(at: Position): Params {
  return { at: at.id, key: at.key ?? '' }
}

/**
 * The number of users without counting the table: those below the indexer's mark, kept with it,
 * and the few above it (search-index.ts; migration 0017).
 */
const USER_COUNT = `SELECT users + (SELECT count(*) FROM users WHERE id > through) AS n
  FROM users_indexed WHERE id = 1`

/** `q` against a user's search key (both folded alike, search-key.ts). */
const KEY_MATCHES = "search_key LIKE $pattern ESCAPE '\\'"

/**
 * `q` of three characters or more: a quoted phrase of the trigram index is a substring match.
 * The index covers the users up to its mark, less those whose entry is stale; the users above
 * the mark and the stale ones are matched directly (search-index.ts), so the answer is exact
 * whatever the indexer has reached.
 */
const INDEXED_MATCH = `id IN (
  SELECT rowid FROM users_search WHERE users_search MATCH $phrase
    AND rowid NOT IN (SELECT id FROM users_search_stale)
  UNION ALL
  SELECT id FROM users
  WHERE id > (SELECT through FROM users_indexed WHERE id = 1) AND ${KEY_MATCHES}
  UNION ALL
  -- CROSS JOIN keeps the few stale ids outside: SQLite, without statistics, chose to scan users.
  SELECT u.id FROM users_search_stale s CROSS JOIN users u ON u.id = s.id
  WHERE u.${KEY_MATCHES}
)`

function filterSql(filters: SearchFilters) {
  const conditions: string[] = []
  const params: Record<string, string> = {}
  if (filters.emailKey !== undefined) {
    conditions.push('email_key = $emailKey')
    params.emailKey = filters.emailKey
  }
  if (filters.q !== undefined) {
    params.pattern = likePattern(filters.q)
    if ([...filters.q].length >= INDEXED_QUERY_LENGTH) {
      conditions.push(INDEXED_MATCH)
      params.phrase = `"${filters.q.replaceAll('"', '""')}"`
    } else {
      // Shorter than a trigram: the index cannot narrow it, every key is read.
      conditions.push(KEY_MATCHES)
    }
  }
  const joined = conditions.join(' AND ')
  return joined === ''
    ? { where: '', and: '', params }
    : { where: ` WHERE ${joined}`, and: ` AND ${joined}`, params }
}

interface SignInColumns {
  id: number
  email: string
  password_hash: string | null
  role: Role
  verified: number
  active: number
  second_factor: number
}

/** Whether the user has a confirmed TOTP: a password alone then does not sign it in. */
const SECOND_FACTOR = `EXISTS (SELECT 1 FROM totp_factors t
  WHERE t.user_id = users.id AND t.confirmed_at IS NOT NULL) AS second_factor`

function signInRow(row: SignInColumns | null): SignInRow | null {
  if (row === null) return null
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    role: row.role,
    verified: row.verified === 1,
    active: row.active === 1,
    secondFactor: row.second_factor === 1,
  }
}
