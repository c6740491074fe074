import { fieldDetail } from '../errors/details'
import { notFound, preconditionFailed, validationFailed } from '../errors/errors'
import { hasDeceptiveCharacter } from '../text'

export const MAX_DESCRIPTION_LENGTH = 1000

// C0 controls other than tab and line feed, DEL and C1.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/

/**
 * A description is at most 1000 characters (code points) of well-formed text: line breaks and
 * tabs, but no other control characters, bidirectional controls or invisible characters.
 */
export function isValidDescription(value: string): boolean {
  if (!value.isWellFormed() || CONTROL.test(value) || hasDeceptiveCharacter(value)) return false
  return [...value].length <= MAX_DESCRIPTION_LENGTH
}

/** A group as every answer shows it: its members are user ids, in id order. */
export interface Group {
  id: number
  name: string
  description: string | null
  members: number[]
  created_at: string
  updated_at: string
}

/** A group as stored: the view plus the version its ETag is made from. */
export interface GroupRecord extends Group {
  version: number
}

export interface NewGroup {
  name: string
  description: string | null
}

export interface GroupChanges {
  name?: string
  /** null clears it; undefined leaves it. */
  description?: string | null
}

export interface GroupGuard {
  /** The versions the caller accepts (from If-Match); null when any will do. */
  versions: readonly number[] | null
  /** Read-only fields echoed back in a PUT body; each must match the record. */
  echo?: { id?: number; created_at?: string; updated_at?: string }
}

/** The key name uniqueness is decided on, as for emails: JavaScript lower-casing. */
export function groupNameKey(name: string): string {
  return name.trim().toLowerCase()
}

export function toGroupView(group: GroupRecord): Group {
  return {
    id: group.id,
    name: group.name,
    description: group.description,
    members: group.members,
    created_at: group.created_at,
    updated_at: group.updated_at,
  }
}

/**
 * Checks the stored group (locked by the write) against a guard: NOT_FOUND, PRECONDITION_FAILED
 * when If-Match names another version, VALIDATION_ERROR when an echoed field differs.
 */
export function checkGroupGuard(current: GroupRecord | null, guard: GroupGuard): GroupRecord {
  if (current === null) throw notFound('No group with this id')
  if (guard.versions !== null && !guard.versions.includes(current.version)) {
    throw preconditionFailed()
  }
  const mismatched = Object.entries(guard.echo ?? {}).filter(
    ([field, value]) => value !== undefined && current[field as keyof GroupRecord] !== value,
  )
  if (mismatched.length > 0) {
    throw validationFailed(
      mismatched.map(([field, value]) =>
        fieldDetail(field, 'is read-only and does not match the group', value),
      ),
    )
  }
  return current
}
