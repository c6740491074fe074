import type { AuditSource } from '../audit/events'
import { parseRowId } from '../db/row-id'
import type { Transaction } from '../db/unit'
import { AppError, ScimError, scimBadRequest } from '../errors/errors'
import type { GroupRecord } from '../groups/records'
import type { GroupWrites } from '../groups/store'
import { FIELD_RULES, isValidName } from '../users/fields'
import { etagOf } from '../users/records'
import { attributeValue, GROUP_SCHEMA } from './names'
import { applyPatch, patchOnVersionRead } from './patch'
import type { ScimGroupQuery, ScimGroupRow, ScimProfileRows, ScimProfileWrites } from './profile'
import { textOrNull } from './users'

/** At most this many members in one Group body (a PATCH adds members a few at a time). */
const MAX_MEMBERS = 10_000

/**
 * A group as SCIM shows it (RFC 7643 section 4.2): roster's group, its members by id, and the
 * identity provider's externalId when it sent one.
 */
export function toScimGroup(
  { group, externalId }: ScimGroupRow,
  names: ReadonlyMap<number, string>,
  base: string,
  withMembers = true,
): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: String(group.id),
    ...(externalId === null ? {} : { externalId }),
    displayName: group.name,
    ...(withMembers
      ? {
          members: group.members.map((id) => ({
            value: String(id),
            $ref: `${base}/Users/${id}`,
            type: 'User',
            ...(names.has(id) ? { display: names.get(id) } : {}),
          })),
        }
      : {}),
    meta: {
      resourceType: 'Group',
      created: group.created_at,
      lastModified: group.updated_at,
      location: `${base}/Groups/${group.id}`,
      version: etagOf(group),
    },
  }
}

/** What a Group body asks roster to store. */
export interface ScimGroupInput {
  name: string
  members: number[]
  externalId: string | null
}

/**
 * Reads a Group: `displayName`, `members` by `value` (a user's id) and `externalId`. 400 when
 * wrong.
 */
export function readScimGroup(body: Record<string, unknown>): ScimGroupInput {
  const name = attributeValue(body, 'displayName')
  if (typeof name !== 'string' || !isValidName(name)) {
    throw scimBadRequest(
      'invalidValue',
      `displayName ${name === undefined ? 'is required' : FIELD_RULES.name}`,
    )
  }
  const listed = attributeValue(body, 'members')
  if (listed !== undefined && listed !== null && !Array.isArray(listed)) {
    throw scimBadRequest('invalidValue', 'members must be an array of members')
  }
  const entries = (listed ?? []) as unknown[]
  if (entries.length > MAX_MEMBERS) {
    throw scimBadRequest('invalidValue', `members may hold at most ${MAX_MEMBERS} members`)
  }
  const members = new Set<number>()
  entries.forEach((entry, index) => {
    const value =
      typeof entry === 'object' && entry !== null
        ? attributeValue(entry as Record<string, unknown>, 'value')
        : undefined
    const id =
      typeof value === 'string' || typeof value === 'number' ? parseRowId(String(value)) : null
    if (id === null) {
      throw scimBadRequest('invalidValue', `members[${index}].value must be a user's id`)
    }
    members.add(id)
  })
  const externalId = textOrNull(body, 'externalId', 'externalId')
  return { name: name.trim(), members: [...members], externalId }
}

export interface ScimGroupsInputs {
  groups: { get(id: number): Promise<GroupRecord | null> }
  /** The role of a user, to keep admins out of SCIM's reach (null: no such user). */
  roleOf(userId: number): Promise<string | null>
  rows: ScimProfileRows
  transaction: Transaction<{ groups: GroupWrites; scimProfiles: ScimProfileWrites }>
}

/**
 * SCIM's Groups over roster's groups (CONTRACT sections 12 and 13): the same groups, written
 * through the same rules (a taken name is a conflict, each member added or removed is an audit
 * event), a replacement or a PATCH applied as the members added and removed, in one unit.
 */
export class ScimGroups {
  constructor(private readonly inputs: ScimGroupsInputs) {}

  async get(id: number): Promise<ScimGroupRow | null> {
    const group = await this.inputs.groups.get(id)
    if (group === null) return null
    const externalIds = await this.inputs.rows.groupExternalIds([id])
    return { group, externalId: externalIds.get(id) ?? null }
  }

  list(query: ScimGroupQuery): Promise<{ total: number; rows: ScimGroupRow[] }> {
    return this.inputs.rows.listGroups(query)
  }

  /** The names of the members of these groups, for their `display`. */
  namesOf(groups: readonly GroupRecord[]): Promise<Map<number, string>> {
    const ids = [...new Set(groups.flatMap((group) => group.members))]
    return ids.length === 0 ? Promise.resolve(new Map()) : this.inputs.rows.namesOf(ids)
  }

  async create(input: ScimGroupInput, by: AuditSource): Promise<ScimGroupRow> {
    await this.refuseAdmins(input.members)
    const id = await this.inputs.transaction(async (tx) => {
      const created = await tx.groups.create({ name: input.name, description: null }, by)
      // Always: the row marks the group as SCIM's, with or without an externalId.
      await tx.scimProfiles.putGroupExternalId(created.id, input.externalId)
      for (const member of input.members) await addMember(tx.groups, created.id, member, by)
      return created.id
    })
    return await this.committed(id)
  }

  async replace(
    id: number,
    input: ScimGroupInput,
    versions: readonly number[] | null,
    by: AuditSource,
  ): Promise<ScimGroupRow> {
    return await this.write(id, input, versions, by, await this.ownGroup(id))
  }

  /**
   * Stores a replacement of a group SCIM owns, read as `before` (null: none, for the write to
   * answer 404): the members it adds or removes may not be admins.
   */
  private async write(
    id: number,
    input: ScimGroupInput,
    versions: readonly number[] | null,
    by: AuditSource,
    before: ScimGroupRow | null,
  ): Promise<ScimGroupRow> {
    if (before !== null) {
      await this.refuseAdmins(changedMembers(before.group.members, input.members))
    }
    await this.inputs.transaction(async (tx) => {
      // The update's answer holds the members as this unit sees them (the row is locked).
      const renamed = await tx.groups.update(id, { name: input.name }, { versions }, by)
      // A replacement without externalId forgets it (RFC 7644 section 3.5.1).
      await tx.scimProfiles.putGroupExternalId(id, input.externalId)
      const wanted = new Set(input.members)
      for (const member of renamed.members) {
        if (!wanted.has(member)) await tx.groups.removeMember(id, member, by)
      }
      const had = new Set(renamed.members)
      for (const member of input.members) {
        if (!had.has(member)) await addMember(tx.groups, id, member, by)
      }
    })
    return await this.committed(id)
  }

  /** Applies a PatchOp to the group as SCIM shows it, stored as a replacement (see ScimUsers). */
  async patch(
    id: number,
    body: Record<string, unknown>,
    versions: readonly number[] | null,
    base: string,
    by: AuditSource,
  ): Promise<ScimGroupRow | null> {
    let current: ScimGroupRow | null = null
    return await patchOnVersionRead(
      async () => {
        current = await this.ownGroup(id)
        return current
      },
      (read) => read.group.version,
      {
        apply: (read) =>
          readScimGroup(applyPatch(toScimGroup(read, new Map(), base), body, 'group')),
        changesNothing,
        store: (input, accepted) => this.write(id, input, accepted, by, current),
      },
      versions,
    )
  }

  async remove(id: number, versions: readonly number[] | null, by: AuditSource): Promise<void> {
    await this.ownGroup(id)
    await this.inputs.transaction((tx) => tx.groups.remove(id, { versions }, by))
  }

  /**
   * 403 when one of these users is an admin: a SCIM key never changes an admin, its groups
   * included (section 17).
   */
  private async refuseAdmins(userIds: Iterable<number>): Promise<void> {
    for (const userId of userIds) {
      if ((await this.inputs.roleOf(userId)) !== 'admin') continue
      throw new ScimError(
        'FORBIDDEN',
        null,
        `members: user ${userId} is an admin, whose groups a SCIM key does not change`,
      )
    }
  }

  /**
   * The group, 403 unless SCIM made it (CONTRACT section 17: a SCIM key holds the groups it
   * provisioned); null when there is none, for the write to answer 404 as before.
   */
  private async ownGroup(id: number): Promise<ScimGroupRow | null> {
    const group = await this.inputs.groups.get(id)
    if (group === null) return null
    const externalIds = await this.inputs.rows.groupExternalIds([id])
    if (!externalIds.has(id)) {
      throw new ScimError(
        'FORBIDDEN',
        null,
        'A SCIM key changes only the groups SCIM provisioned; this one was made outside SCIM',
      )
    }
    return { group, externalId: externalIds.get(id) ?? null }
  }

  /** The group as committed: what the answer shows (404 if another write deleted it since). */
  private async committed(id: number): Promise<ScimGroupRow> {
    const group = await this.get(id)
    if (group === null) throw new AppError('NOT_FOUND', 'No group with this id')
    return group
  }
}

/** The users a replacement adds or removes. */
function changedMembers(had: readonly number[], wanted: readonly number[]): number[] {
  const before = new Set(had)
  const after = new Set(wanted)
  return [...after.difference(before), ...before.difference(after)]
}

/** Whether storing `input` would leave the group as it is: its name, externalId and members. */
function changesNothing({ group, externalId }: ScimGroupRow, input: ScimGroupInput): boolean {
  const wanted = new Set(input.members)
  return (
    input.name === group.name &&
    input.externalId === externalId &&
    wanted.size === group.members.length &&
    group.members.every((member) => wanted.has(member))
  )
}

/** Adds a member; a value that names no user is 400 invalidValue, not 404. */
async function addMember(groups: GroupWrites, groupId: number, userId: number, by: AuditSource) {
  try {
    await groups.addMember(groupId, userId, by)
  } catch (error) {
    if (
      error instanceof AppError &&
      error.errorCode === 'NOT_FOUND' &&
      error.message.includes('user')
    ) {
      throw scimBadRequest('invalidValue', `members: no user has the id ${userId}`)
    }
    throw error
  }
}
