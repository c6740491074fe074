import type { PageRequest } from '../db/page'
import type { ExportedUser, NewUser, UserChanges, UserRecord, WriteGuard } from './records'
import type { User } from './schema'
import type { SearchRequest, SearchResult } from './search'

/**
 * The users' writes. Alone, each is a transaction of its own; inside a unit of work
 * (`transaction` of the composition root) they join that unit and see its uncommitted rows.
 *
 * Written for a database without a single writer: `update` and `remove` are conditional on
 * the stored version (If-Match is a compare-and-set, never a read then a write), and email
 * uniqueness is the database's unique index on the folded email, raised as CONFLICT.
 */
export interface UserWrites {
  /** Creates a user; CONFLICT when the email is taken (without regard to case). */
  create(input: NewUser): Promise<UserRecord>
  /**
   * Applies changes when the stored version is one the guard accepts; NOT_FOUND,
   * PRECONDITION_FAILED, CONFLICT, VALIDATION_ERROR (an echoed read-only field differs). A new
   * password ends every session and token of the user in the same transaction.
   */
  update(id: number, changes: UserChanges, guard: WriteGuard): Promise<UserRecord>
  /** Deletes when the stored version is one the guard accepts; NOT_FOUND, PRECONDITION_FAILED. */
  remove(id: number, guard: WriteGuard): Promise<void>
  /** The id of the user with this email (without regard to case). */
  idByEmail(email: string): Promise<number | null>
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
  byEmail(email: string): Promise<{ id: number; passwordHash: string | null } | null>
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
