import type { GroupRecord } from '../groups/records'
import type { UserRecord } from '../users/records'
import type { Condition, UserColumn } from './filter'

/** An email of a SCIM user besides the primary one (which is the record's `email`). */
export interface OtherEmail {
  value: string
  type: string | null
  display: string | null
}

/**
 * What SCIM says of a user beyond roster's own record (CONTRACT section 13). A user made
 * through /users has none: every field is null and its SCIM view comes from the record alone.
 */
export interface ScimProfile {
  externalId: string | null
  givenName: string | null
  familyName: string | null
  formattedName: string | null
  /** The primary email's `type` (`work`, `home`, …); its value is the record's `email`. */
  primaryEmailType: string | null
  otherEmails: OtherEmail[]
  employeeNumber: string | null
  department: string | null
  /** The manager's id as the identity provider sent it (`manager.value`). */
  managerId: string | null
}

export const EMPTY_PROFILE: ScimProfile = Object.freeze({
  externalId: null,
  givenName: null,
  familyName: null,
  formattedName: null,
  primaryEmailType: null,
  otherEmails: [],
  employeeNumber: null,
  department: null,
  managerId: null,
})

/** A user as SCIM shows it: the record and its profile. */
export interface ScimUserRow {
  user: UserRecord
  profile: ScimProfile
}

/** A group as SCIM shows it: roster's group and the identity provider's id for it. */
export interface ScimGroupRow {
  group: GroupRecord
  externalId: string | null
}

/** The attributes a list may be sorted by (their columns, in the backends). */
export type SortKey = UserColumn | 'email'

/** One page of a SCIM list: a filter compiled by the backend, an offset, a count. */
export interface ScimUserQuery {
  where: Condition
  sortBy: SortKey
  descending: boolean
  /** Rows to skip (startIndex - 1). */
  offset: number
  /** Rows to answer; 0 counts only. */
  count: number
}

/** The attributes a Groups list may be sorted by. */
export type GroupSortKey =
  | 'group_id'
  | 'group_name'
  | 'group_external_id'
  | 'group_created_at'
  | 'group_updated_at'

/** One page of a SCIM Groups list. */
export interface ScimGroupQuery {
  where: Condition
  sortBy: GroupSortKey
  descending: boolean
  offset: number
  count: number
  /** False when the answer leaves members out (`excludedAttributes=members`): none are read. */
  withMembers: boolean
}

/** What a database keeps of SCIM profiles, and SCIM's filtered lists, row operations only. */
export interface ScimProfileRows {
  /** The groups a filter matches, in order, with the total the filter matches. */
  listGroups(query: ScimGroupQuery): Promise<{ total: number; rows: ScimGroupRow[] }>
  /**
   * The groups among these that SCIM provisioned (created through /scim/v2), each with its
   * externalId (null: none); a group made outside SCIM is left out.
   */
  groupExternalIds(groupIds: readonly number[]): Promise<Map<number, string | null>>
  /** The names of these users (a group's members' `display`); a missing user is left out. */
  namesOf(userIds: readonly number[]): Promise<Map<number, string>>
  /** The profiles of these users; a user without one is left out. */
  profilesOf(userIds: readonly number[]): Promise<Map<number, ScimProfile>>
  /** The users a filter matches, in order, with the total the filter matches. */
  listUsers(query: ScimUserQuery): Promise<{ total: number; rows: ScimUserRow[] }>
}

/** The profile writes a unit of work makes. */
export interface ScimProfileWrites {
  /** Stores the user's profile, replacing what was there. */
  put(userId: number, profile: ScimProfile): Promise<void>
  /** Marks the group as SCIM's, with its externalId (null: none, or forgotten). */
  putGroupExternalId(groupId: number, externalId: string | null): Promise<void>
}
