import type { SQL } from 'bun'
import type { Role } from '../../auth/access'
import type { PageRequest } from '../../db/page'
import { groupNameKey } from '../../groups/records'
import {
  type Clock,
  checkGuard,
  type ExportedUser,
  emailKey,
  type GuardedRow,
  type ImportedUser,
  type NewUser,
  type TransferredProfile,
  type User,
  type UserRecord,
  usernameKey,
} from '../../users/records'
import {
  keysetOrder,
  likePattern,
  type Position,
  runSearchAsync,
  type SearchFilters,
  type SearchStep,
  type StepAnswer,
  searchFilters,
  sortKeyOf,
  type UserSort,
} from '../../users/search'
import { searchKeyOf } from '../../users/search-key'
import type { SignInRow, UserRows, UserWriteRows } from '../../users/store'
import { isUniqueViolation, neutralUnique } from './errors'
import { lookupText } from './text'
import { type Stored, withIsoTimestamps } from './timestamps'
import { createUserCount, USER_COUNT_FROM, type UserCount } from './user-count'

const EXPORT_BATCH = 1000
/** pg_advisory_xact_lock's key for role changes: 'role' as a 32-bit number. */
const ROLES_LOCK = 0x726f6c65
// A user's groups come with it, in the same statement.
const GROUPS = `coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups`
// Shown as the API shows every timestamp (ISO 8601, milliseconds, Z), converted by PostgreSQL.
const VERIFIED = `to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at`
// A username is the email until set (coalesce: a row another tool inserted without one).
const USERNAME = 'coalesce(username, email) AS username'
const VIEW_COLUMNS = `id, name, email, ${USERNAME}, active, created_at, updated_at, role, ${VERIFIED}, ${GROUPS}`

// Ids are `integer` columns; a client's id (up to 2^53-1) is compared as int8, so one beyond
// 2^31-1 finds nothing instead of failing the statement.

/**
 * The users' writes on PostgreSQL, over `q`: the pool (each write its own transaction) or a
 * unit of work's transaction. Several instances write at once, so If-Match is a
 * compare-and-set: the row is locked (`FOR UPDATE`) in the write's transaction and its version
 * checked there; a concurrent write with the same If-Match waits for the lock, then finds the
 * new version (412). Email uniqueness is the unique index on the folded email.
 */
function createPgUserWriteRows(
  q: SQL,
  now: Clock,
  /** Runs work in a transaction: `q.begin` on the pool, the work itself inside a unit. */
  inTransaction: <T>(work: (tx: SQL) => Promise<T>) => Promise<T>,
  count: UserCount,
): UserWriteRows {
  async function lockGuarded(tx: SQL, id: number, guard: Parameters<typeof checkGuard>[1]) {
    const [current] = await tx<Stored<GuardedRow>[]>`
      SELECT id, name, email, coalesce(username, email) AS username, created_at, updated_at, role,
        version, active, (password_hash IS NOT NULL
      OR EXISTS (SELECT 1 FROM passkeys k WHERE k.user_id = users.id)) AS can_sign_in
      FROM users WHERE id = ${id}::int8 FOR UPDATE`
    return checkGuard(current && withIsoTimestamps(current), guard)
  }

  return {
    async insert(input: NewUser) {
      const at = now().toISOString()
      const [created] = await neutralUnique(
        q<Stored<UserRecord>[]>`
          INSERT INTO users (name, email, email_key, username, username_key, active, password_hash,
            role, created_at, updated_at, search_key)
          VALUES (${input.name.trim()}, ${input.email}, ${emailKey(input.email)},
                  ${input.username ?? input.email}, ${usernameKey(input.username ?? input.email)},
                  ${input.active ?? true}, ${input.passwordHash}, ${input.role ?? 'member'}, ${at}, ${at},
                  ${searchKeyOf(input.name, input.email)})
          RETURNING id, name, email, username, created_at, updated_at, role, NULL::text AS email_verified_at, version, active, '[]'::json AS groups`,
      )
      count.written()
      return withIsoTimestamps(created as Stored<UserRecord>)
    },

    update(id, changes, guard) {
      return inTransaction(async (tx) => {
        const before = await lockGuarded(tx, id, guard)
        const email = changes.email ?? null
        const username = changes.username ?? null
        const searchKey =
          changes.name === undefined && changes.email === undefined
            ? null
            : searchKeyOf(changes.name ?? before.name, changes.email ?? before.email)
        const [updated] = await neutralUnique(
          tx<Stored<UserRecord>[]>`
            UPDATE users SET
              name = coalesce(${changes.name?.trim() ?? null}::text, name),
              email = coalesce(${email}::text, email),
              email_key = coalesce(${email === null ? null : emailKey(email)}::text, email_key),
              username = coalesce(${username}::text, username),
              username_key = coalesce(${username === null ? null : usernameKey(username)}::text, username_key),
              password_hash = coalesce(${changes.passwordHash ?? null}::text, password_hash),
              role = coalesce(${changes.role ?? null}::text, role),
              active = coalesce(${changes.active ?? null}::boolean, active),
              search_key = coalesce(${searchKey}::text, search_key),
              -- A new address is not verified yet (the email-change flow verifies it after).
              email_verified_at = CASE WHEN ${email === null ? null : emailKey(email)}::text <> email_key
                THEN NULL ELSE email_verified_at END,
              version = version + 1,
              updated_at = ${now().toISOString()}
            WHERE id = ${id}::int8
            RETURNING id, name, email, coalesce(username, email) AS username, created_at, updated_at, role, to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at, version, active,
              coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups`,
        )
        return { before, after: withIsoTimestamps(updated as Stored<UserRecord>) }
      })
    },

    remove(id, guard) {
      return inTransaction(async (tx) => {
        const removed = await lockGuarded(tx, id, guard)
        await tx`DELETE FROM users WHERE id = ${id}::int8`
        count.written()
        return removed
      })
    },

    async idByEmailKey(key) {
      const [row] = await q<{ id: number }[]>`
        SELECT id FROM users WHERE email_key = ${lookupText(key)}`
      return row?.id ?? null
    },

    async verifyEmail(id, email) {
      const at = now().toISOString()
      // The row locked by the subquery, so the old value is the one this update replaces.
      const [row] = await q<(Stored<UserRecord> & { was_verified_at: string | null })[]>`
        UPDATE users SET email_verified_at = ${at}::timestamptz, version = users.version + 1,
          updated_at = ${at}
        FROM (SELECT id, email_verified_at FROM users WHERE id = ${id}::int8 FOR UPDATE) was
        WHERE users.id = was.id AND users.email_key = ${lookupText(emailKey(email))}
        RETURNING users.id, users.name, users.email,
          coalesce(users.username, users.email) AS username, users.created_at, users.updated_at, users.role,
          to_char(users.email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at,
          to_char(was.email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS was_verified_at,
          users.version, users.active,
          coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups`
      if (row === undefined) return null
      const { was_verified_at: wasVerifiedAt, ...user } = row
      return { user: withIsoTimestamps(user), wasVerifiedAt }
    },

    async lockSignInNames(id) {
      const [row] = await q<{ email: string; username: string }[]>`
        SELECT email, coalesce(username, email) AS username FROM users WHERE id = ${id}::int8 FOR UPDATE`
      return row ?? null
    },

    async lockRoles() {
      await q`SELECT pg_advisory_xact_lock(${ROLES_LOCK})`
    },

    async lockRole(id) {
      const [row] = await q<{ role: Role }[]>`
        SELECT role FROM users WHERE id = ${id}::int8 FOR UPDATE`
      return row?.role ?? null
    },

    async claimSignInNames(keys) {
      // In order, so two units claiming the same names cannot wait on each other.
      await q.unsafe(
        'SELECT pg_advisory_xact_lock(hashtext(k)) FROM (SELECT unnest($1::text[]) AS k ORDER BY 1) AS names',
        [`{${[...keys].map((key) => JSON.stringify(key)).join(',')}}`],
      )
    },

    async signInNameTaken(key, exceptId, usernamesOnly) {
      const [row] = usernamesOnly
        ? await q<{ taken: number }[]>`
            SELECT 1 AS taken FROM users WHERE username_key = ${key} AND username_key <> email_key
              AND id IS DISTINCT FROM ${exceptId}::int8 LIMIT 1`
        : await q<{ taken: number }[]>`
            SELECT 1 AS taken FROM users
            WHERE (email_key = ${key} OR (username_key = ${key} AND username_key <> email_key))
              AND id IS DISTINCT FROM ${exceptId}::int8 LIMIT 1`
      return row !== undefined
    },

    async countOtherActiveAdmins(id) {
      const [row] = await q<{ n: number }[]>`
        SELECT count(*)::int AS n FROM users WHERE role = 'admin' AND active AND id <> ${id}::int8`
      return row?.n ?? 0
    },
  }
}

/** Users in PostgreSQL: the writes above over the pool, and the reads. */
export function createPgUserRows(
  pool: SQL,
  now: Clock,
): UserRows & {
  /** The writes as a unit of work's transaction sees them. */
  inUnit(tx: SQL): UserWriteRows
} {
  const count = createUserCount(pool)
  return {
    ...createPgUserWriteRows(pool, now, (work) => pool.begin(work), count),
    inUnit: (tx) => createPgUserWriteRows(tx, now, (work) => work(tx), count),

    async get(id) {
      const [row] = await pool<Stored<UserRecord>[]>`
        SELECT id, name, email, coalesce(username, email) AS username, created_at, updated_at, role, to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at, version, active,
          coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups
        FROM users WHERE id = ${id}::int8`
      return row === undefined ? null : withIsoTimestamps(row)
    },

    async page(request: PageRequest) {
      // One statement, so the page and the total are one snapshot; the total's row is there
      // even when the page is empty. The total is the kept count (user-count.ts).
      const rows = await pool.unsafe<(Stored<User> & { total: string; deltas: number })[]>(
        `SELECT page.*, counted.total, counted.deltas FROM ${USER_COUNT_FROM} counted LEFT JOIN LATERAL (
          SELECT id, name, email, coalesce(username, email) AS username, active, created_at, updated_at, role, to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at,
            coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups
          FROM users
          ORDER BY id LIMIT $1 OFFSET $2
        ) page ON true`,
        [request.limit, request.offset],
      )
      count.seen(rows[0]?.deltas ?? 0)
      const total = Number(rows[0]?.total ?? 0)
      const data = rows
        .filter((row) => row.id !== null)
        .map(
          ({
            id,
            name,
            email,
            username,
            active,
            created_at,
            updated_at,
            role,
            email_verified_at,
            groups,
          }) => ({
            id,
            name,
            email,
            username,
            active,
            created_at: created_at.toISOString(),
            updated_at: updated_at.toISOString(),
            role,
            email_verified_at,
            groups,
          }),
        )
      return { data, total }
    },

    search(request) {
      // One snapshot for the count and the page.
      return pool.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', (tx) => {
        const filters = searchFilters(request.filters)
        return runSearchAsync(request, (step) =>
          readStep(tx, { filters, sort: request.sort }, step, count),
        )
      })
    },

    count: () => count.read(),

    async byEmailKey(key) {
      const [row] = await pool<SignInColumns[]>`
        SELECT id, email, password_hash, role, email_verified_at IS NOT NULL AS verified, active,
          EXISTS (SELECT 1 FROM totp_factors t
                  WHERE t.user_id = users.id AND t.confirmed_at IS NOT NULL) AS second_factor
        FROM users WHERE email_key = ${lookupText(key)}`
      return signInRow(row)
    },

    async byUsernameKey(key) {
      const [row] = await pool<SignInColumns[]>`
        SELECT id, email, password_hash, role, email_verified_at IS NOT NULL AS verified, active,
          EXISTS (SELECT 1 FROM totp_factors t
                  WHERE t.user_id = users.id AND t.confirmed_at IS NOT NULL) AS second_factor
        FROM users WHERE username_key = ${lookupText(key)}`
      return signInRow(row)
    },

    async withPasswordHash(userId) {
      const [row] = await pool<
        (Stored<UserRecord> & { password_hash: string | null; second_factor: boolean })[]
      >`
        SELECT id, name, email, coalesce(username, email) AS username, created_at, updated_at, role, to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at, version, active, password_hash,
          EXISTS (SELECT 1 FROM totp_factors t
                  WHERE t.user_id = users.id AND t.confirmed_at IS NOT NULL) AS second_factor,
          coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups
        FROM users WHERE id = ${userId}::int8`
      if (row === undefined) return null
      const { password_hash: passwordHash, second_factor: secondFactor, ...user } = row
      return { user: withIsoTimestamps<UserRecord>(user), passwordHash, secondFactor }
    },

    async replacePasswordHash(userId, expected, replacement) {
      await pool`
        UPDATE users SET password_hash = ${replacement}
        WHERE id = ${userId}::int8 AND password_hash = ${expected}`
    },

    async emailKeysTaken(keys) {
      const rows = await pool<{ email_key: string }[]>`
        SELECT email_key FROM users WHERE email_key = ANY(${keys.map(lookupText)}::text[])
        UNION SELECT username_key FROM users WHERE username_key = ANY(${keys.map(lookupText)}::text[])
          AND username_key <> email_key`
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
          const groups = new Map<string, number>()
          const existingGroups = new Set<number>()
          for (let start = 0; start < rows.length; start += INSERT_BATCH) {
            const batch = rows.slice(start, start + INSERT_BATCH)
            // Checked before the import, a batch nearly always goes in whole: a plain INSERT
            // (10 % faster than one that skips conflicts), in a savepoint, and only when a
            // unique index refuses it (a user created meanwhile) row by row as to which.
            const whole = await tx
              .savepoint((sp) => insertUsers(sp, batch, at, 'refuse'))
              .catch((error: unknown) => {
                if (isUniqueViolation(error)) return null
                throw error
              })
            const ids = whole ?? (await insertUsers(tx, batch, at, 'skip'))
            const added: { row: ImportedUser; id: number }[] = []
            batch.forEach((row, index) => {
              // A key inserted once: the first row with it (rows go in in order) is that row.
              const key = emailKey(row.email)
              const id = ids.get(key)
              ids.delete(key)
              if (id === undefined) conflicts.push(start + index)
              else added.push({ row, id })
            })
            inserted += added.length
            await insertProfiles(tx, added)
            await insertMemberships(tx, added, at, groups, existingGroups)
          }
          count.written()
          if (options.allOrNothing && conflicts.length > 0) {
            // Rolls the batch back: begin() rolls back on a throw, and the caller gets the count.
            throw new RolledBack(conflicts)
          }
          // Ids given (--keep-ids): the next user gets the one after the highest.
          if (rows.some((row) => row.id !== undefined)) {
            await tx`
              SELECT setval('users_id_seq', top)
              FROM (SELECT max(id) AS top FROM users) AS highest
              WHERE top >= (SELECT last_value FROM users_id_seq)`
          }
          // A group that was there gained members: a new version, as a membership change gives.
          await tx`UPDATE groups SET version = version + 1, updated_at = ${at}
            WHERE id = ANY(${[...existingGroups]}::int4[])`
          return { inserted, conflicts }
        })
        .catch((error: unknown) => {
          if (error instanceof RolledBack) return { inserted: 0, conflicts: error.conflicts }
          throw error
        })
    },
  }
}

/** Rows per INSERT of an import: one statement of arrays, not a round trip per row. */
const INSERT_BATCH = 10_000

/**
 * Inserts the rows in order in one statement; answers the ids by email key. `refuse`: a
 * unique index refusing any row refuses the statement; `skip`: such rows are left out.
 */
async function insertUsers(
  tx: SQL,
  rows: readonly ImportedUser[],
  at: string,
  onConflict: 'refuse' | 'skip',
): Promise<Map<string, number>> {
  const column = <T>(pick: (row: ImportedUser) => T) => rows.map(pick)
  const added = await tx<{ id: number; email_key: string }[]>`
    INSERT INTO users (id, name, email, email_key, username, username_key, active, role,
      email_verified_at, password_hash, created_at, updated_at, search_key)
    SELECT coalesce(id, nextval('users_id_seq')), name, email, email_key,
      username, username_key, active, role,
      email_verified_at::timestamptz, password_hash, created_at::timestamptz,
      updated_at::timestamptz, search_key
    FROM unnest(${column((row) => row.id ?? null)}::int4[],
                ${column((row) => row.name.trim())}::text[],
                ${column((row) => row.email)}::text[],
                ${column((row) => emailKey(row.email))}::text[],
                ${column((row) => row.username ?? row.email)}::text[],
                ${column((row) => usernameKey(row.username ?? row.email))}::text[],
                ${column((row) => row.active !== false)}::boolean[],
                ${column((row) => row.role ?? 'member')}::text[],
                ${column((row) => row.emailVerifiedAt ?? null)}::text[],
                ${column((row) => row.passwordHash)}::text[],
                ${column((row) => row.createdAt ?? at)}::text[],
                ${column((row) => row.updatedAt ?? at)}::text[],
                ${column((row) => searchKeyOf(row.name, row.email))}::text[])
      WITH ORDINALITY AS given(id, name, email, email_key, username, username_key, active, role,
        email_verified_at, password_hash, created_at, updated_at, search_key, n)
    ORDER BY n
    ${onConflict === 'skip' ? tx`ON CONFLICT DO NOTHING` : tx``}
    RETURNING id, email_key`
  return new Map(added.map((row) => [row.email_key, row.id]))
}

/** The SCIM profiles of the users just inserted, in one statement. */
async function insertProfiles(
  tx: SQL,
  added: readonly { row: ImportedUser; id: number }[],
): Promise<void> {
  const profiled = added.flatMap(({ row, id }) => (row.scim == null ? [] : [{ id, p: row.scim }]))
  if (profiled.length === 0) return
  const column = <T>(pick: (entry: (typeof profiled)[number]) => T) => profiled.map(pick)
  await tx`
    INSERT INTO user_profiles (user_id, external_id, given_name, family_name, formatted_name,
      primary_email_type, other_emails, employee_number, department, manager_id)
    SELECT * FROM unnest(${column((e) => e.id)}::int4[], ${column((e) => e.p.external_id)}::text[],
      ${column((e) => e.p.given_name)}::text[], ${column((e) => e.p.family_name)}::text[],
      ${column((e) => e.p.formatted_name)}::text[], ${column((e) => e.p.primary_email_type)}::text[],
      ${column((e) => JSON.stringify(e.p.other_emails))}::text[],
      ${column((e) => e.p.employee_number)}::text[], ${column((e) => e.p.department)}::text[],
      ${column((e) => e.p.manager_id)}::text[])`
}

/**
 * The memberships of the users just inserted: groups found by name, created when missing
 * (`groups` keeps the ids by name key across batches; `existing`, those that were there).
 */
async function insertMemberships(
  tx: SQL,
  added: readonly { row: ImportedUser; id: number }[],
  at: string,
  groups: Map<string, number>,
  existing: Set<number>,
): Promise<void> {
  const names = new Map<string, string>()
  for (const { row } of added) {
    for (const name of row.groups ?? []) {
      const key = groupNameKey(name)
      if (!groups.has(key) && !names.has(key)) names.set(key, name.trim())
    }
  }
  if (names.size > 0) {
    const keys = [...names.keys()]
    for (const found of await tx<{ id: number; name_key: string }[]>`
        SELECT id, name_key FROM groups WHERE name_key = ANY(${keys}::text[])`) {
      groups.set(found.name_key, found.id)
      existing.add(found.id)
    }
    const missing = keys.filter((key) => !groups.has(key))
    if (missing.length > 0) {
      // Another instance creating one of these meanwhile makes this statement fail (unique
      // name_key): the import is then refused whole, and running it again finds the group.
      for (const made of await tx<{ id: number; name_key: string }[]>`
          INSERT INTO groups (name, name_key, description, created_at, updated_at)
          SELECT name, name_key, NULL, ${at}::timestamptz, ${at}::timestamptz
          FROM unnest(${missing.map((key) => names.get(key))}::text[], ${missing}::text[])
            AS given(name, name_key)
          RETURNING id, name_key`) {
        groups.set(made.name_key, made.id)
      }
    }
  }
  const pairs = added.flatMap(({ row, id }) =>
    (row.groups ?? []).map((name) => [groups.get(groupNameKey(name)) as number, id] as const),
  )
  if (pairs.length === 0) return
  await tx`
    INSERT INTO group_members (group_id, user_id)
    SELECT * FROM unnest(${pairs.map(([group]) => group)}::int4[], ${pairs.map(([, user]) => user)}::int4[])`
}

/** One read of the v2 list's plan (users/search.ts), inside the search's snapshot. */
async function readStep(
  tx: SQL,
  { filters, sort }: { filters: SearchFilters; sort: UserSort },
  step: SearchStep,
  count: UserCount,
): Promise<StepAnswer> {
  const conditions: string[] = []
  const params: (string | number)[] = []
  const bind = (value: string | number) => `$${params.push(value)}`
  if (filters.emailKey !== undefined)
    conditions.push(`email_key = ${bind(lookupText(filters.emailKey))}`)
  if (filters.q !== undefined) {
    // Both sides folded alike (search-key.ts); the trigram index serves three characters or more.
    conditions.push(`search_key LIKE ${bind(lookupText(likePattern(filters.q)))}`)
  }
  const and = conditions.map((condition) => ` AND ${condition}`).join('')
  const users = async (text: string) =>
    (await tx.unsafe<Stored<User>[]>(text, params)).map(withIsoTimestamps<User>)
  switch (step.kind) {
    case 'count': {
      if (conditions.length === 0) return await count.read(tx)
      const [row] = await tx.unsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM users WHERE true${and}`,
        params,
      )
      return row?.n ?? 0
    }
    case 'fromOffset':
      return await users(
        `SELECT ${VIEW_COLUMNS} FROM users WHERE true${and} ORDER BY ${orderBy(sort, 'after')} LIMIT ${step.limit} OFFSET ${step.offset}`,
      )
    case 'after':
    case 'before': {
      const past = pastPosition(sort, step.kind, step.at, bind)
      return await users(
        `SELECT ${VIEW_COLUMNS} FROM users WHERE ${past}${and} ORDER BY ${orderBy(sort, step.kind)} LIMIT ${step.limit}`,
      )
    }
    case 'exists': {
      const past = pastPosition(sort, step.side, step.at, bind)
      const rows = await tx.unsafe(`SELECT 1 FROM users WHERE ${past}${and} LIMIT 1`, params)
      return rows.length > 0
    }
  }
}

/**
 * The column each sort orders by, ties by id, in the "C" collation: code-point order, as
 * SQLite compares, whatever the database's own collation (whose order varies by platform).
 * users_name_order_idx and users_email_order_idx (migration 0018) are these expressions.
 */
const SORT_COLUMNS = {
  name: 'search_key COLLATE "C"',
  email: 'email_key COLLATE "C"',
} as const

function orderBy(sort: UserSort, side: 'after' | 'before'): string {
  const { order } = keysetOrder(sort, side)
  const key = sortKeyOf(sort)
  return key === null ? `id ${order}` : `${SORT_COLUMNS[key]} ${order}, id ${order}`
}

/** The rows after (or before) a position in the sort, as a row comparison the index serves. */
function pastPosition(
  sort: UserSort,
  side: 'after' | 'before',
  at: Position,
  bind: (value: string | number) => string,
): string {
  const { comparison } = keysetOrder(sort, side)
  const key = sortKeyOf(sort)
  if (key === null) return `id ${comparison} ${bind(at.id)}::int8`
  const keyParam = bind(lookupText(at.key ?? ''))
  return `(${SORT_COLUMNS[key]}, id) ${comparison} (${keyParam}::text, ${bind(at.id)}::int8)`
}

class RolledBack extends Error {
  constructor(readonly conflicts: number[]) {
    super('rolled back')
  }
}

// Groups by name in code-point order ("C"), as SQLite orders them: the same on every database,
// whatever ids the groups got there.
const EXPORT_COLUMNS = `u.id, u.name, u.email, coalesce(u.username, u.email) AS username, u.active,
  u.role, to_char(u.email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at,
  u.created_at, u.updated_at,
  coalesce((SELECT json_agg(g.name ORDER BY g.name COLLATE "C") FROM group_members m
    JOIN groups g ON g.id = m.group_id WHERE m.user_id = u.id), '[]'::json) AS groups,
  p.user_id IS NOT NULL AS provisioned, p.external_id, p.given_name, p.family_name,
  p.formatted_name, p.primary_email_type, p.other_emails, p.employee_number, p.department,
  p.manager_id, u.password_hash`

/** A row of EXPORT_COLUMNS: timestamps as Dates, the profile's columns flat. */
type ExportRow = Stored<Omit<ExportedUser, 'scim'>> &
  Omit<TransferredProfile, 'other_emails'> & { provisioned: boolean; other_emails: string | null }

function exportedUser(row: ExportRow): ExportedUser {
  const { provisioned, other_emails: otherEmails, ...rest } = row
  const {
    external_id,
    given_name,
    family_name,
    formatted_name,
    primary_email_type,
    employee_number,
    department,
    manager_id,
    ...user
  } = rest
  const scim: TransferredProfile | null = provisioned
    ? {
        external_id,
        given_name,
        family_name,
        formatted_name,
        primary_email_type,
        other_emails: JSON.parse(otherEmails ?? '[]'),
        employee_number,
        department,
        manager_id,
      }
    : null
  const { password_hash, ...record } = withIsoTimestamps<Omit<ExportedUser, 'scim'>>(user)
  return { ...record, scim, password_hash }
}

/** Every user in id order from one REPEATABLE READ snapshot, a batch at a time. */
async function* exportBatches(pool: SQL): AsyncIterable<readonly ExportedUser[]> {
  const reserved = await pool.reserve()
  try {
    await reserved`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
    let after = 0
    for (;;) {
      const batch = await reserved.unsafe<ExportRow[]>(
        `SELECT ${EXPORT_COLUMNS} FROM users u LEFT JOIN user_profiles p ON p.user_id = u.id
         WHERE u.id > $1 ORDER BY u.id LIMIT ${EXPORT_BATCH}`,
        [after],
      )
      if (batch.length === 0) break
      yield batch.map(exportedUser)
      after = (batch.at(-1) as ExportRow).id
    }
  } finally {
    await reserved`ROLLBACK`.catch(() => {})
    reserved.release()
  }
}

interface SignInColumns {
  id: number
  email: string
  password_hash: string | null
  role: Role
  verified: boolean
  active: boolean
  second_factor: boolean
}

function signInRow(row: SignInColumns | undefined): SignInRow | null {
  if (row === undefined) return null
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    role: row.role,
    verified: row.verified,
    active: row.active,
    secondFactor: row.second_factor,
  }
}
