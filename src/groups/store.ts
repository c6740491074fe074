import { UniqueViolation } from '../db/conflict'
import type { PageRequest } from '../db/page'
import { fieldDetail } from '../errors/details'
import { conflict, notFound } from '../errors/errors'
import type { GroupChanges, GroupGuard, GroupRecord, NewGroup } from './records'

/**
 * The groups' writes as a database does them, alone or inside a unit of work. `update` and
 * `remove` lock the group and check the guard (records.ts checkGroupGuard); a name taken
 * without regard to case throws UniqueViolation. A membership that comes or goes moves the
 * group's version and the user's (both records show it), in the same transaction.
 */
export interface GroupWriteRows {
  insert(group: NewGroup, at: string): Promise<GroupRecord>
  update(id: number, changes: GroupChanges, guard: GroupGuard, at: string): Promise<GroupRecord>
  remove(id: number, guard: GroupGuard): Promise<void>
  addMember(groupId: number, userId: number, at: string): Promise<MembershipOutcome>
  removeMember(groupId: number, userId: number, at: string): Promise<MembershipOutcome>
}

/** What a membership write found. */
export type MembershipOutcome = 'changed' | 'unchanged' | 'no-group' | 'no-user'

/** What a database keeps of groups: the writes above and the reads, row operations only. */
export interface GroupRows extends GroupWriteRows {
  get(id: number): Promise<GroupRecord | null>
  /** A page in id order and the total, from one snapshot. */
  page(request: PageRequest): Promise<{ data: GroupRecord[]; total: number }>
}

/**
 * A user's memberships as a unit of work ends them (the user's deletion): each group it was in
 * moves its version, so an ETag of that group read before does not match any more.
 */
export interface MembershipWrites {
  leaveAll(userId: number, at: string): Promise<void>
}

/** Groups with their rules: unique names, NOT_FOUND for a missing group or user. */
export interface GroupStore {
  create(group: NewGroup): Promise<GroupRecord>
  get(id: number): Promise<GroupRecord | null>
  list(request: PageRequest): Promise<{ data: GroupRecord[]; total: number }>
  update(id: number, changes: GroupChanges, guard: GroupGuard): Promise<GroupRecord>
  remove(id: number, guard: GroupGuard): Promise<void>
  /** Puts the user in the group; true when it was not in it yet. NOT_FOUND for either. */
  addMember(groupId: number, userId: number): Promise<boolean>
  /** Takes the user out of the group; true when it was in it. NOT_FOUND for the group. */
  removeMember(groupId: number, userId: number): Promise<boolean>
}

export type GroupWrites = Pick<GroupStore, 'create'>

/** The rules of groups over a unit of work's rows (POST /groups with an Idempotency-Key). */
export function groupWrites(rows: GroupWriteRows, now: () => Date): GroupWrites {
  return { create: (group) => uniqueName(group.name, rows.insert(group, now().toISOString())) }
}

export function createGroupStore(rows: GroupRows, now: () => Date): GroupStore {
  const at = () => now().toISOString()
  return {
    ...groupWrites(rows, now),
    get: (id) => rows.get(id),
    list: (request) => rows.page(request),
    update: (id, changes, guard) => uniqueName(changes.name, rows.update(id, changes, guard, at())),
    remove: (id, guard) => rows.remove(id, guard),
    async addMember(groupId, userId) {
      return changed(await rows.addMember(groupId, userId, at()))
    },
    async removeMember(groupId, userId) {
      return changed(await rows.removeMember(groupId, userId, at()))
    },
  }
}

function changed(outcome: MembershipOutcome): boolean {
  if (outcome === 'no-group') throw notFound('No group with this id')
  if (outcome === 'no-user') throw notFound('No user with this id')
  return outcome === 'changed'
}

/** A write whose name a group already has (without regard to case) is CONFLICT. */
async function uniqueName<T>(name: string | undefined, write: Promise<T>): Promise<T> {
  try {
    return await write
  } catch (error) {
    if (!(error instanceof UniqueViolation)) throw error
    throw conflict('A group with this name already exists', [
      fieldDetail(
        'name',
        'is taken by another group (names are compared without regard to case)',
        name,
      ),
    ])
  }
}
