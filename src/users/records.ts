import type { Role } from '../auth/access'
import { fieldDetail } from '../errors/details'
import { notFound, preconditionFailed, validationFailed } from '../errors/errors'

/** A user as every answer shows it. */
/**
 * The strong ETag of a versioned record (a user, a group, an endpoint): `"<id>.<version>"`; it
 * changes whenever the record does. SCIM's meta.version is the same tag.
 */
export const etagOf = (record: { id: number; version: number }) =>
  `"${record.id}.${record.version}"`

export interface User {
  id: number
  name: string
  email: string
  /** What the user may sign in with besides its email (SCIM's userName); the email unless set. */
  username: string
  /** False: the account may not sign in (SCIM's active). */
  active: boolean
  created_at: string
  updated_at: string
  /** `member` or `admin` (auth/access.ts). */
  role: Role
  /** When the user followed a verification link sent to `email`; null until then. */
  email_verified_at: string | null
  /** The ids of the groups the user is in, in id order. */
  groups: number[]
}

/** The clock the users stores stamp created_at and updated_at with. */
export type Clock = () => Date

/** A user as stored: the public view plus the version its ETag is made from. */
export interface UserRecord extends User {
  version: number
}

export interface NewUser {
  name: string
  email: string
  /** The email when not given. */
  username?: string
  /** True when not given. */
  active?: boolean
  passwordHash: string | null
  /** `member` when not given. */
  role?: Role
}

export interface UserChanges {
  name?: string
  email?: string
  username?: string
  /** False ends every session and token of the user, in the same unit of work. */
  active?: boolean
  /** A new argon2id hash; undefined leaves the password as it is. */
  passwordHash?: string
  /** A new role; undefined leaves it as it is. */
  role?: Role
  /**
   * Signs the account out everywhere in the same unit of work: every session and token ends,
   * every API key its credential made (an admin's), and every link mailed to it, undo links
   * included (an email change undone: whoever made it must not stay signed in).
   */
  signOut?: true
}

export interface WriteGuard {
  /** The versions the caller accepts (from If-Match); null when any will do. */
  versions: readonly number[] | null
  /** Read-only fields echoed back in a PUT body; each must match the record. */
  echo?: { id?: number; created_at?: string; updated_at?: string }
  /**
   * Thrown when the account can sign in at the moment of the write (it has a password): a
   * caller allowed to set the password or email only of an account that cannot sign in. Checked
   * on the locked row, so an account that gains a password meanwhile is not taken over.
   */
  refuseIfCanSignIn?: Error
  /** Thrown when the write would change the user's role: a caller that may not change roles. */
  refuseRoleChange?: Error
  /** Thrown when the write would make the user active or inactive: the same authority as a role. */
  refuseActiveChange?: Error
  /**
   * Thrown when the account is an admin at the moment of the write (its row locked): a caller
   * whose authority covers members only (CONTRACT section 17).
   */
  refuseIfAdmin?: () => Error
}

/** A row as a guarded write reads it (locked): the record and whether it can sign in. */
/** A user's row as a write finds it: the record without its groups. */
export type StoredUser = Omit<UserRecord, 'groups'>

export interface GuardedRow extends StoredUser {
  can_sign_in: boolean | number
}

export interface UserFilters {
  /** Exact email, compared without regard to case. */
  email?: string
  /** Substring of name or email (ASCII letters compared without regard to case). */
  q?: string
}

/** The view of a record that responses carry (no version, no hash). */
export function toView(user: UserRecord): User {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    username: user.username,
    active: user.active,
    created_at: user.created_at,
    updated_at: user.updated_at,
    role: user.role,
    email_verified_at: user.email_verified_at,
    groups: user.groups,
  }
}

/**
 * What SCIM keeps of a user beyond the record (scim/profile.ts's ScimProfile), as an export
 * writes it and an import reads it back.
 */
export interface TransferredProfile {
  external_id: string | null
  given_name: string | null
  family_name: string | null
  formatted_name: string | null
  primary_email_type: string | null
  other_emails: { value: string; type: string | null; display: string | null }[]
  employee_number: string | null
  department: string | null
  manager_id: string | null
}

/** A user as `roster users export` writes it: every field of the record, groups by name. */
export interface ExportedUser {
  id: number
  name: string
  email: string
  username: string
  active: boolean
  role: Role
  email_verified_at: string | null
  created_at: string
  updated_at: string
  /** The names of the user's groups, in code-point order (ids differ between databases). */
  groups: string[]
  /**
   * The user's SCIM profile; null when it has none (it was not provisioned through SCIM). An
   * empty profile is not null: it marks the user as provisioned.
   */
  scim: TransferredProfile | null
  password_hash: string | null
}

/** A user as an import inserts it: a new user with the rest of an exported record. */
export interface ImportedUser extends NewUser {
  /** The id to keep (an import into a roster with no users); the next id when not given. */
  id?: number
  /** Null when not given. */
  emailVerifiedAt?: string | null
  /** The moment of the import when not given. */
  createdAt?: string
  /** The moment of the import when not given. */
  updatedAt?: string
  /** Group names; a group that does not exist is created. None when not given. */
  groups?: readonly string[]
  /** Null when not given. */
  scim?: TransferredProfile | null
}

/** The key email uniqueness is decided on: JavaScript lower-casing folds all of Unicode. */
export function emailKey(email: string): string {
  return email.toLowerCase()
}

/** The key username uniqueness is decided on, folded as emails are. */
export function usernameKey(username: string): string {
  return username.toLowerCase()
}

/**
 * Checks the stored record against a write's guard (both databases call it on the row they
 * hold locked): NOT_FOUND when there is none, the guard's refusal of an admin (section 17),
 * PRECONDITION_FAILED when If-Match names another version, VALIDATION_ERROR when an echoed
 * read-only field differs.
 */
export function checkGuard(current: GuardedRow | null | undefined, guard: WriteGuard): StoredUser {
  if (current === null || current === undefined) throw notFound('No user with this id')
  if (guard.refuseIfAdmin !== undefined && current.role === 'admin') throw guard.refuseIfAdmin()
  if (guard.refuseIfCanSignIn !== undefined && current.can_sign_in) {
    throw guard.refuseIfCanSignIn
  }
  if (guard.versions !== null && !guard.versions.includes(current.version)) {
    throw preconditionFailed()
  }
  const mismatched = Object.entries(guard.echo ?? {}).filter(
    ([field, value]) => value !== undefined && current[field as keyof GuardedRow] !== value,
  )
  if (mismatched.length > 0) {
    throw validationFailed(
      mismatched.map(([field, value]) =>
        fieldDetail(field, 'is read-only and does not match the record', value),
      ),
    )
  }
  const { can_sign_in: _, ...record } = current
  return record
}
