import { type AccountTokenWrites, TOKEN_FLOWS } from '../accounts/tokens'
import { type AuditSource, type Changes, changedFields } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import type { Role } from '../auth/access'
import type { CredentialWrites } from '../auth/sessions'
import { UniqueViolation } from '../db/conflict'
import type { PageRequest } from '../db/page'
import type { Transaction } from '../db/unit'
import { fieldDetail } from '../errors/details'
import { conflict } from '../errors/errors'
import type { MembershipWrites } from '../groups/store'
import {
  type ExportedUser,
  emailKey,
  type NewUser,
  type StoredUser,
  type User,
  type UserChanges,
  type UserRecord,
  type WriteGuard,
} from './records'
import type { SearchRequest, SearchResult } from './search'

/**
 * The users' writes. Alone, each is a transaction of its own; inside a unit of work they join
 * that unit and see its uncommitted rows.
 *
 * Written for a database without a single writer: `update` and `remove` are conditional on
 * the stored version (If-Match is a compare-and-set, never a read then a write), and email
 * uniqueness is the database's unique index on the folded email, raised as CONFLICT.
 */
export interface UserWrites {
  /** Creates a user; CONFLICT when the email is taken (without regard to case). */
  create(input: NewUser, by: AuditSource): Promise<UserRecord>
  /**
   * Applies changes when the stored version is one the guard accepts; NOT_FOUND,
   * PRECONDITION_FAILED, CONFLICT, VALIDATION_ERROR (an echoed read-only field differs). A new
   * password ends every session and token of the user in the same transaction.
   */
  update(id: number, changes: UserChanges, guard: WriteGuard, by: AuditSource): Promise<UserRecord>
  /**
   * Deletes when the stored version is one the guard accepts, and every session and token of
   * the user with it; NOT_FOUND, PRECONDITION_FAILED.
   */
  remove(id: number, guard: WriteGuard, by: AuditSource): Promise<void>
  /** The id of the user with this email (without regard to case). */
  idByEmail(email: string): Promise<number | null>
  /**
   * Marks the address verified when the user's address is still `email`; null when it is not
   * (or there is no such user).
   */
  verifyEmail(id: number, email: string, by: AuditSource): Promise<UserRecord | null>
}

/** Users: reads see committed data only. */
export interface UserStore extends UserWrites {
  get(id: number): Promise<UserRecord | null>
  /** A page in id order and the total, from one snapshot. */
  list(request: PageRequest): Promise<{ data: User[]; total: number }>
  /** The v2 list: filters, and an offset or a keyset position. See SearchResult. */
  search(request: SearchRequest): Promise<SearchResult>
  count(): Promise<number>
  /** id and password hash by email, compared without regard to case (for sign-in). */
  byEmail(
    email: string,
  ): Promise<{ id: number; passwordHash: string | null; role: Role; verified: boolean } | null>
  /** A user's record with its current password hash, in one read (for cached Basic sign-ins). */
  withPasswordHash(
    userId: number,
  ): Promise<{ user: UserRecord; passwordHash: string | null } | null>
  /**
   * Replaces the password hash when it is still `expected`, with a stronger hash of the same
   * password (after a sign-in with an imported hash): the record does not change otherwise.
   */
  replacePasswordHash(userId: number, expected: string, replacement: string): Promise<void>
  /** Which of these emails users already have, as email keys (one query for all). */
  emailsTaken(emails: readonly string[]): Promise<Set<string>>
  /**
   * Every user in id order, password hashes included, in batches, from one consistent
   * snapshot however long the reading takes; abandoning the iteration ends the snapshot.
   */
  exportAll(): AsyncIterable<readonly ExportedUser[]>
  /**
   * Inserts many users in one transaction of their own (the CLI's import). A row whose email
   * is taken is reported by index; with `allOrNothing`, any such row rolls the whole batch back.
   */
  insertMany(
    rows: readonly NewUser[],
    options: { allOrNothing: boolean },
  ): Promise<{ inserted: number; conflicts: number[] }>
}

/**
 * The users' writes as a database does them: row operations, in a unit of work or alone. A
 * unique index that refuses a write throws UniqueViolation; `update` and `remove` lock the row
 * and check the guard (records.ts checkGuard) before they write.
 */
export interface UserWriteRows {
  insert(input: NewUser): Promise<UserRecord>
  /** The record as the guard found it (`before`) and as the update left it. */
  update(
    id: number,
    changes: UserChanges,
    guard: WriteGuard,
  ): Promise<{ before: StoredUser; after: UserRecord }>
  /** The record as it was deleted. */
  remove(id: number, guard: WriteGuard): Promise<StoredUser>
  idByEmailKey(key: string): Promise<number | null>
  /**
   * Marks the user's address verified, when it is still `email` (compared without regard to
   * case): a link sent to an address the user has since left verifies nothing (null).
   */
  verifyEmail(
    id: number,
    email: string,
  ): Promise<{ user: UserRecord; wasVerifiedAt: string | null } | null>
  /**
   * Serialises the units that take an admin away, until this unit ends (PostgreSQL: a
   * transaction advisory lock; SQLite's single writer does it already), so two admins demoting
   * each other at once cannot both count the other as the admin who remains. Taken after the
   * user's row (lockRole), never before, so two units cannot wait on each other.
   */
  lockRoles(): Promise<void>
  /**
   * The user's role, its row locked until this unit ends (FOR UPDATE on PostgreSQL); null when
   * there is no such user.
   */
  lockRole(id: number): Promise<Role | null>
  /** The user's address, its row locked until this unit ends; null when there is no such user. */
  lockEmail(id: number): Promise<string | null>
  /** How many admins there are, as this unit sees them. */
  countAdmins(): Promise<number>
}

/** What a database keeps of users: the writes above and the reads, row operations only. */
export interface UserRows extends UserWriteRows {
  get(id: number): Promise<UserRecord | null>
  page(request: PageRequest): Promise<{ data: User[]; total: number }>
  /** The v2 list: runs search.ts's plan (runSearch) over one snapshot. */
  search(request: SearchRequest): Promise<SearchResult>
  count(): Promise<number>
  byEmailKey(
    key: string,
  ): Promise<{ id: number; passwordHash: string | null; role: Role; verified: boolean } | null>
  withPasswordHash(
    userId: number,
  ): Promise<{ user: UserRecord; passwordHash: string | null } | null>
  replacePasswordHash(userId: number, expected: string, replacement: string): Promise<void>
  emailKeysTaken(keys: readonly string[]): Promise<Set<string>>
  exportAll(): AsyncIterable<readonly ExportedUser[]>
  insertMany(
    rows: readonly NewUser[],
    options: { allOrNothing: boolean },
  ): Promise<{ inserted: number; conflicts: number[] }>
}

/** What a unit of work's user rules write through, besides the users' own rows. */
export interface UserUnitRows {
  users: UserWriteRows
  credentials: CredentialWrites
  memberships: MembershipWrites
  accountTokens: Pick<AccountTokenWrites, 'revoke'>
  audit: AuditWrites
}

/** The fields of a user an event shows; never the password's hash. */
const AUDITED_FIELDS = ['name', 'email', 'role'] as const

const userTarget = (id: number) => ({ type: 'user', id: String(id) })

/**
 * The users' rules over a unit of work's rows: a taken email is CONFLICT; a new password or a
 * deletion ends the user's sessions and tokens in the same unit, on every database alike; every
 * change records its audit event in the unit too.
 */
export function userWrites(rows: UserUnitRows, now: () => Date): UserWrites {
  const { users, credentials, memberships, accountTokens, audit } = rows
  return {
    async create(input, by) {
      const user = await uniqueEmail(input.email, users.insert(input))
      const changes = changedFields(null, user, AUDITED_FIELDS)
      await audit.record(by, { action: 'user.created', target: userTarget(user.id), changes })
      return user
    },
    async update(id, changes, guard, by) {
      const roleChanges =
        changes.role !== undefined && (await changesRole(users, id, changes.role, guard))
      const emailBefore = changes.email === undefined ? null : await users.lockEmail(id)
      const effective = roleChanges ? changes : { ...changes, role: undefined }
      const { before, after } = await uniqueEmail(changes.email, users.update(id, effective, guard))
      // A new password or role: every session and token of the user ends (section 12).
      if (changes.passwordHash !== undefined || roleChanges) {
        await credentials.revokeAllForUser(id)
      }
      // A new password or address ends the links mailed before it (section 14): a reset link
      // in an old mailbox must not outlive the change.
      const emailChanged = emailBefore !== null && emailKey(emailBefore) !== emailKey(after.email)
      if (changes.passwordHash !== undefined || emailChanged) {
        await accountTokens.revoke(id, TOKEN_FLOWS, now().getTime())
      }
      const changed: Changes = changedFields(before, after, AUDITED_FIELDS)
      if (changes.passwordHash !== undefined) changed.password = { changed: true }
      if (Object.keys(changed).length > 0) {
        await audit.record(by, { action: 'user.updated', target: userTarget(id), changes: changed })
      }
      return after
    },
    async verifyEmail(id, email, by) {
      const verified = await users.verifyEmail(id, email)
      if (verified === null) return null
      // Verified once: a magic link that signs a verified user in again changes nothing to log.
      if (verified.wasVerifiedAt === null) {
        const after = verified.user.email_verified_at
        const changes = { email_verified_at: { before: null, after } }
        await audit.record(by, { action: 'user.updated', target: userTarget(id), changes })
      }
      return verified.user
    },
    async remove(id, guard, by) {
      // Only an admin's deletion waits for the roles lock: a member's takes no admin away.
      if ((await users.lockRole(id)) === 'admin') await keepAnAdmin(users, id)
      // Its groups stay; each one it leaves shows it (a new version, so a new ETag). Before the
      // deletion, which takes the memberships with it; the unit undoes both if the guard fails.
      await memberships.leaveAll(id, now().toISOString())
      const removed = await users.remove(id, guard)
      await credentials.revokeAllForUser(id)
      const changes = changedFields(removed, null, AUDITED_FIELDS)
      await audit.record(by, { action: 'user.deleted', target: userTarget(id), changes })
    },
    idByEmail: (email) => users.idByEmailKey(emailKey(email)),
  }
}

/**
 * Whether a write asking for `role` changes the user's role; refused when the guard says the
 * caller may not change roles, or when it would leave no admin (a demotion takes the roles
 * lock; a promotion takes no admin away and does not).
 */
async function changesRole(
  rows: UserWriteRows,
  id: number,
  role: Role,
  guard: WriteGuard,
): Promise<boolean> {
  const current = await rows.lockRole(id)
  if (current === null || current === role) return false
  if (guard.refuseRoleChange !== undefined) throw guard.refuseRoleChange
  if (current === 'admin') await keepAnAdmin(rows, id)
  return true
}

/** CONFLICT when `id` is the only admin: nobody demotes or deletes the last admin. */
async function keepAnAdmin(rows: UserWriteRows, id: number): Promise<void> {
  await rows.lockRoles()
  if ((await rows.countAdmins()) > 1) return
  throw conflict(`User ${id} is the last admin; make another user an admin first`, [
    fieldDetail('role', 'the last admin cannot be demoted or deleted', 'admin'),
  ])
}

/**
 * The users as the app sees them. Every write runs as a unit of work: the change and its audit
 * event commit together.
 */
export function createUserStore(
  rows: UserRows,
  transaction: Transaction<{ users: UserWrites }>,
): UserStore {
  return {
    create: (input, by) => transaction((tx) => tx.users.create(input, by)),
    update: (id, changes, guard, by) =>
      transaction((tx) => tx.users.update(id, changes, guard, by)),
    remove: (id, guard, by) => transaction((tx) => tx.users.remove(id, guard, by)),
    idByEmail: (email) => rows.idByEmailKey(emailKey(email)),
    verifyEmail: (id, email, by) => transaction((tx) => tx.users.verifyEmail(id, email, by)),
    get: (id) => rows.get(id),
    list: (request) => rows.page(request),
    search: (request) => rows.search(request),
    count: () => rows.count(),
    byEmail: (email) => rows.byEmailKey(emailKey(email)),
    withPasswordHash: (userId) => rows.withPasswordHash(userId),
    replacePasswordHash: (userId, expected, replacement) =>
      rows.replacePasswordHash(userId, expected, replacement),
    emailsTaken: (emails) => rows.emailKeysTaken(emails.map(emailKey)),
    exportAll: () => rows.exportAll(),
    insertMany: (batch, options) => rows.insertMany(batch, options),
  }
}

/** A unique violation on the folded email is CONFLICT, with a detail for `email`. */
async function uniqueEmail<T>(email: string | undefined, write: Promise<T>): Promise<T> {
  try {
    return await write
  } catch (error) {
    if (error instanceof UniqueViolation) {
      throw conflict('A user with this email already exists', [
        fieldDetail('email', 'is already in use', email),
      ])
    }
    throw error
  }
}
