import { type AccountTokenWrites, FLOWS_A_CHANGE_ENDS } from '../accounts/tokens'
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
  type ImportedUser,
  type NewUser,
  type StoredUser,
  type User,
  type UserChanges,
  type UserRecord,
  usernameKey,
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

/** The users' writes as a unit of work holds them: a read under the row's lock besides. */
export interface UserUnitWrites extends UserWrites {
  /**
   * The user's address, its row locked until the unit ends (null: no such user): what a change
   * in the same unit moves it from, whatever another unit does meanwhile.
   */
  lockedAddress(id: number): Promise<string | null>
}

/** What a sign-in needs of the account it names. */
export interface SignInRow {
  id: number
  email: string
  passwordHash: string | null
  role: Role
  /** Whether the address is verified (--require-verified-email). */
  verified: boolean
  /** False: the account may not sign in (SCIM's active). */
  active: boolean
  /** True: the account has a confirmed TOTP, and a password alone does not sign it in. */
  secondFactor: boolean
}

/** Users: reads see committed data only. */
export interface UserStore extends UserWrites {
  get(id: number): Promise<UserRecord | null>
  /** A page in id order and the total, from one snapshot. */
  list(request: PageRequest): Promise<{ data: User[]; total: number }>
  /** The v2 list: filters, and an offset or a keyset position. See SearchResult. */
  search(request: SearchRequest): Promise<SearchResult>
  count(): Promise<number>
  /** id and password hash by email, compared without regard to case (for the mailed flows). */
  byEmail(email: string): Promise<SignInRow | null>
  /**
   * The same by what a user signs in with: its email, else its username (both without regard
   * to case). An email wins: a username that is another user's address never hides that user.
   */
  bySignInName(identifier: string): Promise<SignInRow | null>
  /** A user's record with its current password hash, in one read (for cached Basic sign-ins). */
  withPasswordHash(
    userId: number,
  ): Promise<{ user: UserRecord; passwordHash: string | null; secondFactor: boolean } | null>
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
   * Inserts many users in one transaction of their own (the CLI's import), with their SCIM
   * profiles and group memberships (groups found by name, created when missing). A row whose
   * email or username is taken is reported by index; with `allOrNothing`, any such row rolls
   * the whole batch back.
   */
  insertMany(
    rows: readonly ImportedUser[],
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
  /**
   * The user's address and username, its row locked until this unit ends; null when there is
   * no such user.
   */
  lockSignInNames(id: number): Promise<{ email: string; username: string } | null>
  /** How many admins other than `id` can sign in (are active), as this unit sees them. */
  countOtherActiveAdmins(id: number): Promise<number>
  /**
   * Holds these sign-in names (lower-cased) until the unit ends, so two units cannot both find
   * one free (PostgreSQL: transaction advisory locks, in order; SQLite's single writer does it).
   */
  claimSignInNames(keys: readonly string[]): Promise<void>
  /**
   * Whether a user other than `exceptId` signs in with `key` (lower-cased): by a username other
   * than its email, or, unless `usernamesOnly`, by its email too. A username that is not the
   * email is unique by an index only among such usernames (one that is the email is unique as
   * the email is), so a write checks the other kind here.
   */
  signInNameTaken(key: string, exceptId: number | null, usernamesOnly: boolean): Promise<boolean>
}

/** What a database keeps of users: the writes above and the reads, row operations only. */
export interface UserRows extends UserWriteRows {
  get(id: number): Promise<UserRecord | null>
  page(request: PageRequest): Promise<{ data: User[]; total: number }>
  /** The v2 list: runs search.ts's plan (runSearch) over one snapshot. */
  search(request: SearchRequest): Promise<SearchResult>
  count(): Promise<number>
  byEmailKey(key: string): Promise<SignInRow | null>
  byUsernameKey(key: string): Promise<SignInRow | null>
  withPasswordHash(
    userId: number,
  ): Promise<{ user: UserRecord; passwordHash: string | null; secondFactor: boolean } | null>
  replacePasswordHash(userId: number, expected: string, replacement: string): Promise<void>
  emailKeysTaken(keys: readonly string[]): Promise<Set<string>>
  exportAll(): AsyncIterable<readonly ExportedUser[]>
  insertMany(
    rows: readonly ImportedUser[],
    options: { allOrNothing: boolean },
  ): Promise<{ inserted: number; conflicts: number[] }>
}

/** What a unit of work's user rules write through, besides the users' own rows. */
export interface UserUnitRows {
  users: UserWriteRows
  credentials: CredentialWrites
  memberships: MembershipWrites
  accountTokens: Pick<AccountTokenWrites, 'revoke' | 'undoHolder'>
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
export function userWrites(rows: UserUnitRows, now: () => Date): UserUnitWrites {
  const { users, credentials, memberships, accountTokens, audit } = rows
  return {
    async create(input, by) {
      const email = emailKey(input.email)
      const username = input.username === undefined ? email : usernameKey(input.username)
      await usableSignInNames(users, null, email, username === email ? null : username, input)
      await addressNotHeld(email, null, input.email)
      const user = await uniqueUser(input, users.insert(input))
      const changes = changedFields(null, user, AUDITED_FIELDS)
      // The defaults go unsaid: a username that is the email, an account that is active.
      if (user.username !== user.email) changes.username = { before: null, after: user.username }
      if (!user.active) changes.active = { before: null, after: false }
      await audit.record(by, { action: 'user.created', target: userTarget(user.id), changes })
      return user
    },
    async update(id, changes, guard, by) {
      // guard.refuseIfAdmin is checked on the row the update locks (checkGuard): no extra read.
      const roleChanges =
        changes.role !== undefined && (await changesRole(users, id, changes.role, guard))
      const renamed = changes.email !== undefined || changes.username !== undefined
      const namesBefore = renamed ? await users.lockSignInNames(id) : null
      const effective = {
        ...changes,
        role: roleChanges ? changes.role : undefined,
        username: changes.username ?? followingUsername(namesBefore, changes.email),
      }
      if (namesBefore !== null) {
        const email = emailKey(changes.email ?? namesBefore.email)
        const username = usernameKey(effective.username ?? namesBefore.username)
        await usableSignInNames(
          users,
          id,
          changes.email === undefined ? null : email,
          effective.username === undefined || username === email ? null : username,
          changes,
        )
        if (changes.email !== undefined) await addressNotHeld(email, id, changes.email)
      }
      const { before, after } = await uniqueUser(changes, users.update(id, effective, guard))
      // A new password or role, or an account made inactive: every session and token of the
      // user ends (sections 12 and 13).
      const deactivated = before.active && !after.active
      if (before.active !== after.active && guard.refuseActiveChange !== undefined) {
        throw guard.refuseActiveChange
      }
      if (deactivated && after.role === 'admin') await keepAnAdmin(users, id, 'active')
      const signOut = changes.signOut === true
      if (changes.passwordHash !== undefined || roleChanges || deactivated || signOut) {
        await credentials.revokeAllForUser(id)
      }
      // An admin no longer (demoted or deactivated), or signed out everywhere (an email change
      // undone: a thief may have minted keys with its credential): the keys its credential
      // made end for good.
      if (before.role === 'admin' && (after.role !== 'admin' || deactivated || signOut)) {
        await revokeKeysMadeBy(id, by)
      }
      // A new password or address ends the links mailed before it (section 14): a reset link
      // in an old mailbox must not outlive the change. So does a deactivation and a sign-out.
      // Undo links are not ended here: an undo ends those of later moves itself (flows.ts), so
      // a thief cannot spend the owner's older one by undoing a move of its own.
      const emailChanged =
        namesBefore !== null && emailKey(namesBefore.email) !== emailKey(after.email)
      if (changes.passwordHash !== undefined || emailChanged || deactivated || signOut) {
        await accountTokens.revoke(id, FLOWS_A_CHANGE_ENDS, now().getTime())
      }
      const changed: Changes = changedFields(before, after, [
        ...AUDITED_FIELDS,
        'username',
        'active',
      ])
      if (changes.passwordHash !== undefined) changed.password = { changed: true }
      if (signOut) changed.signed_out = { changed: true }
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
      if ((await users.lockRole(id)) === 'admin') {
        if (guard.refuseIfAdmin !== undefined) throw guard.refuseIfAdmin()
        await keepAnAdmin(users, id)
        await revokeKeysMadeBy(id, by)
      }
      // Its groups stay; each one it leaves shows it (a new version, so a new ETag). Before the
      // deletion, which takes the memberships with it; the unit undoes both if the guard fails.
      await memberships.leaveAll(id, now().toISOString())
      // Its sessions and tokens go with its row: ON DELETE CASCADE on both databases.
      const removed = await users.remove(id, guard)
      const changes = changedFields(removed, null, AUDITED_FIELDS)
      await audit.record(by, { action: 'user.deleted', target: userTarget(id), changes })
    },
    idByEmail: (email) => users.idByEmailKey(emailKey(email)),
    lockedAddress: async (id) => (await users.lockSignInNames(id))?.email ?? null,
  }

  /**
   * CONFLICT when another account holds the address: it moved away from it and its undo link
   * back is still live (section 17), so nobody parks an account there to block the undo.
   */
  async function addressNotHeld(key: string, id: number | null, given: string | undefined) {
    const holder = await accountTokens.undoHolder(key, now().getTime())
    if (holder === null || holder === id) return
    throw conflict('This address is held for the account that moved away from it', [
      fieldDetail(
        'email',
        'is held for 7 days for the account that moved away from it, whose owner may undo the move',
        given,
      ),
    ])
  }

  /** Revokes the keys an admin's credential made, one audit event per key (section 17). */
  async function revokeKeysMadeBy(id: number, by: AuditSource): Promise<void> {
    for (const key of await credentials.revokeKeysMadeBy(id, now().toISOString())) {
      await audit.record(by, {
        action: 'api_key.revoked',
        target: { type: 'api_key', id: String(key) },
      })
    }
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

/**
 * CONFLICT when no other active admin would remain: nobody demotes, deletes or deactivates the
 * last admin who can sign in.
 */
async function keepAnAdmin(
  rows: UserWriteRows,
  id: number,
  field: 'role' | 'active' = 'role',
): Promise<void> {
  await rows.lockRoles()
  if ((await rows.countOtherActiveAdmins(id)) > 0) return
  const refusal =
    field === 'role'
      ? fieldDetail('role', 'the last admin cannot be demoted or deleted', 'admin')
      : fieldDetail('active', 'the last admin cannot be deactivated', false)
  throw conflict(`User ${id} is the last active admin; make another user an admin first`, [refusal])
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
    bySignInName: async (identifier) =>
      (await rows.byEmailKey(emailKey(identifier))) ??
      (await rows.byUsernameKey(usernameKey(identifier))),
    withPasswordHash: (userId) => rows.withPasswordHash(userId),
    replacePasswordHash: (userId, expected, replacement) =>
      rows.replacePasswordHash(userId, expected, replacement),
    emailsTaken: (emails) => rows.emailKeysTaken(emails.map(emailKey)),
    exportAll: () => rows.exportAll(),
    insertMany: (batch, options) => rows.insertMany(batch, options),
  }
}

/**
 * A username that is the email (as /users makes them) follows it to a new address, so that the
 * old address, free again, is not held as someone's username.
 */
function followingUsername(
  before: { email: string; username: string } | null,
  email: string | undefined,
): string | undefined {
  if (before === null || email === undefined) return undefined
  return usernameKey(before.username) === emailKey(before.email) ? email : undefined
}

/**
 * Refuses (CONFLICT) a new email that is another user's username, or a username (other than
 * the user's email) that is another user's email or username: a sign-in looks a name up as an
 * email first, so either would let one account's name sign in to another. Same-kind duplicates
 * are the unique indexes' to refuse.
 */
async function usableSignInNames(
  users: UserWriteRows,
  id: number | null,
  email: string | null,
  username: string | null,
  values: { email?: string; username?: string },
): Promise<void> {
  const keys = [email, username].filter((key): key is string => key !== null)
  if (keys.length === 0) return
  await users.claimSignInNames(keys)
  if (email !== null && (await users.signInNameTaken(email, id, true))) {
    throw conflict('A user with this email already exists', [
      fieldDetail('email', 'is already in use', values.email),
    ])
  }
  if (username !== null && (await users.signInNameTaken(username, id, false))) {
    throw conflict('A user with this username already exists', [
      fieldDetail('username', 'is already in use', values.username),
    ])
  }
}

/** A write refused for a taken email or username is CONFLICT, naming the field. */
async function uniqueUser<T>(
  values: { email?: string; username?: string },
  write: Promise<T>,
): Promise<T> {
  try {
    return await write
  } catch (error) {
    if (!(error instanceof UniqueViolation)) throw error
    // A username not given is the email: its clash is the email's.
    if (error.column === 'username_key' && values.username !== undefined) {
      throw conflict('A user with this username already exists', [
        fieldDetail('username', 'is already in use', values.username),
      ])
    }
    throw conflict('A user with this email already exists', [
      fieldDetail('email', 'is already in use', values.email),
    ])
  }
}
