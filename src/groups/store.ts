import { type AuditSource, changedFields } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import { UniqueViolation } from '../db/conflict'
import type { ListRequest } from '../db/page'
import type { Transaction } from '../db/unit'
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
  /** The group as the guard found it and as the update left it. */
  update(
    id: number,
    changes: GroupChanges,
    guard: GroupGuard,
    at: string,
  ): Promise<{ before: GroupRecord; after: GroupRecord }>
  /** The group as it was deleted. */
  remove(id: number, guard: GroupGuard): Promise<GroupRecord>
  addMember(groupId: number, userId: number, at: string): Promise<MembershipOutcome>
  removeMember(groupId: number, userId: number, at: string): Promise<MembershipOutcome>
}

/** What a membership write found. */
export type MembershipOutcome = 'changed' | 'unchanged' | 'no-group' | 'no-user'

/** What a database keeps of groups: the writes above and the reads, row operations only. */
export interface GroupRows extends GroupWriteRows {
  get(id: number): Promise<GroupRecord | null>
  /** A page in id order and the total, from one snapshot. */
  page(request: ListRequest): Promise<{ data: GroupRecord[]; total: number }>
}

/**
 * A user's memberships as a unit of work ends them (the user's deletion): each group it was in
 * moves its version, so an ETag of that group read before does not match any more.
 */
export interface MembershipWrites {
  leaveAll(userId: number, at: string): Promise<void>
}

/**
 * Groups with their rules: unique names, NOT_FOUND for a missing group or user. Every write
 * records its audit event in the same unit of work, as `by`.
 */
export interface GroupWrites {
  create(group: NewGroup, by: AuditSource): Promise<GroupRecord>
  update(
    id: number,
    changes: GroupChanges,
    guard: GroupGuard,
    by: AuditSource,
  ): Promise<GroupRecord>
  remove(id: number, guard: GroupGuard, by: AuditSource): Promise<void>
  /** Puts the user in the group; true when it was not in it yet. NOT_FOUND for either. */
  addMember(groupId: number, userId: number, by: AuditSource): Promise<boolean>
  /** Takes the user out of the group; true when it was in it. NOT_FOUND for the group. */
  removeMember(groupId: number, userId: number, by: AuditSource): Promise<boolean>
}

export interface GroupStore extends GroupWrites {
  get(id: number): Promise<GroupRecord | null>
  list(request: ListRequest): Promise<{ data: GroupRecord[]; total: number }>
}

/** The fields of a group an event shows (members have events of their own). */
const AUDITED_FIELDS = ['name', 'description'] as const

const groupTarget = (id: number) => ({ type: 'group', id: String(id) })

/** The rules of groups over a unit of work's rows. */
export function groupWrites(
  rows: { groups: GroupWriteRows; audit: AuditWrites },
  now: () => Date,
): GroupWrites {
  const { groups, audit } = rows
  const at = () => now().toISOString()
  const membership = async (
    groupId: number,
    userId: number,
    by: AuditSource,
    adding: boolean,
  ): Promise<boolean> => {
    const outcome = adding
      ? await groups.addMember(groupId, userId, at())
      : await groups.removeMember(groupId, userId, at())
    if (!changed(outcome)) return false
    const member = adding ? { before: null, after: userId } : { before: userId, after: null }
    await audit.record(by, {
      action: adding ? 'group.member_added' : 'group.member_removed',
      target: groupTarget(groupId),
      changes: { member },
    })
    return true
  }
  return {
    async create(group, by) {
      const created = await uniqueName(group.name, groups.insert(group, at()))
      const changes = changedFields(null, created, AUDITED_FIELDS)
      await audit.record(by, { action: 'group.created', target: groupTarget(created.id), changes })
      return created
    },
    async update(id, changes, guard, by) {
      const { before, after } = await uniqueName(
        changes.name,
        groups.update(id, changes, guard, at()),
      )
      const changed = changedFields(before, after, AUDITED_FIELDS)
      if (Object.keys(changed).length > 0) {
        await audit.record(by, {
          action: 'group.updated',
          target: groupTarget(id),
          changes: changed,
        })
      }
      return after
    },
    async remove(id, guard, by) {
      const removed = await groups.remove(id, guard)
      const changes = changedFields(removed, null, [...AUDITED_FIELDS, 'members'])
      await audit.record(by, { action: 'group.deleted', target: groupTarget(id), changes })
    },
    addMember: (groupId, userId, by) => membership(groupId, userId, by, true),
    removeMember: (groupId, userId, by) => membership(groupId, userId, by, false),
  }
}

/** Groups as the app sees them: every write a unit of work of its own. */
export function createGroupStore(
  rows: GroupRows,
  transaction: Transaction<{ groups: GroupWrites }>,
): GroupStore {
  return {
    create: (group, by) => transaction((tx) => tx.groups.create(group, by)),
    update: (id, changes, guard, by) =>
      transaction((tx) => tx.groups.update(id, changes, guard, by)),
    remove: (id, guard, by) => transaction((tx) => tx.groups.remove(id, guard, by)),
    addMember: (groupId, userId, by) =>
      transaction((tx) => tx.groups.addMember(groupId, userId, by)),
    removeMember: (groupId, userId, by) =>
      transaction((tx) => tx.groups.removeMember(groupId, userId, by)),
    get: (id) => rows.get(id),
    list: (request) => rows.page(request),
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
