import type { AuditSource } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import type { Transaction } from '../db/unit'
import type { Role } from './access'
import { looksLikeSecret, newSecret, sha256Hex } from './tokens'

export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000
export const ACCESS_TOKEN_TTL_MS = 60 * 60 * 1000
/** A session is extended on use at most once per this interval (one write, not one per request). */
export const SESSION_RENEW_INTERVAL_MS = 60 * 60 * 1000

export const SESSION_PREFIX = 'rs_'
export const ACCESS_TOKEN_PREFIX = 'rt_'

export interface IssuedLogin {
  sessionToken: string
  accessToken: string
}

/** A user row as the users service reads it (the public fields plus the version). */
export interface SignedInUser {
  id: number
  name: string
  email: string
  created_at: string
  updated_at: string
  version: number
  role: Role
  /** Read where a sign-in checks it (Basic's cache); a session's lookup does not. */
  email_verified_at?: string | null
  /** Read where a sign-in checks it (Basic's cache): the other name it may sign in with. */
  username?: string
  /** Read where a sign-in checks it (Basic's cache): false refuses sign-in. */
  active?: boolean
  /**
   * Read where the lookup reads the whole record (Basic's cache): with it, /me and /secure
   * answer from the row already read instead of reading it again.
   */
  groups?: number[]
}

export interface SessionState {
  user: SignedInUser
  /**
   * True when this use extended the session and the new expiry is stored: the cookie should
   * be sent again. (When it could not be stored, the session is still valid until its old
   * expiry.)
   */
  renewed: boolean
}

/**
 * Sessions and access tokens, shaped after Lucia and The Copenhagen Book: random 256-bit
 * secrets handed out once, only their SHA-256 stored, expiry checked on every use, sessions
 * extended on use (sliding), and everything of a user revocable at once. Every use reads the
 * database, so a revocation on one instance is refused on every other at once.
 */
export interface CredentialStore {
  /**
   * A new session and a new access token for a user who just proved who they are, and the
   * sign-in's audit event (the user as its actor, `by`'s request), in one unit of work.
   */
  issue(userId: number, by: AuditSource, method: SignInMethod): Promise<IssuedLogin>
  /** The session's user, extending it when it was last extended over an hour ago; null if not valid. */
  useSession(token: string): Promise<SessionState | null>
  /** The access token's user; null if unknown, expired or revoked. */
  useAccessToken(token: string): Promise<SignedInUser | null>
  /** Ends a session (logout), with its audit event when there was one to end. */
  revokeSession(token: string, by: AuditSource): Promise<void>
  revokeAccessToken(token: string, by: AuditSource): Promise<void>
  /** Deletes expired sessions and tokens (safe to run on every instance at once). */
  purgeExpired(): Promise<void>
  /**
   * When the sign-in behind a presented session or token happened (epoch ms; a session's
   * renewals do not move it), or null: the step-up rule's "signed in within 5 minutes".
   */
  signedInAt(kind: 'session' | 'access_token', token: string): Promise<number | null>
}

/** A stored session or access token: the SHA-256 of its secret, its user, its lifetime (epoch ms). */
export interface CredentialRow {
  id: string
  userId: number
  createdAt: number
  expiresAt: number
}

/** A credential found by its id, read together with its user. */
export type FoundCredential = SignedInUser & { expires_at: number }

/**
 * What a database keeps of sessions and access tokens: row operations, nothing else (as Lucia's
 * Adapter). Every rule (the secrets' format, expiry, renewal) is CredentialStore's, once.
 */
export interface CredentialRows {
  /** Stores a session and an access token together: both or neither. */
  insertLogin(session: CredentialRow, token: CredentialRow): Promise<void>
  findSession(id: string): Promise<FoundCredential | null>
  findAccessToken(id: string): Promise<FoundCredential | null>
  /** Moves a session's expiry to `expiresAt`, never back; false when the session is gone. */
  extendSession(id: string, expiresAt: number): Promise<boolean>
  /** True when there was such a session. */
  deleteSession(id: string): Promise<boolean>
  deleteAccessToken(id: string): Promise<boolean>
  /** Every session and token that expired at `at` or before (one statement per table). */
  deleteExpired(at: number): Promise<void>
  /** When a session's or token's sign-in happened (epoch ms), or null when it is gone. */
  createdAt(kind: 'session' | 'access_token', id: string): Promise<number | null>
}

/** Credential writes inside a unit of work: a sign-in, a logout, everything of one user ending. */
export interface CredentialWrites
  extends Pick<CredentialRows, 'insertLogin' | 'deleteSession' | 'deleteAccessToken'> {
  revokeAllForUser(userId: number): Promise<void>
  /**
   * Revokes the active API keys an admin's credential made (`created_by_user`, which a key made
   * by such a key inherits): for good when the admin is demoted, deactivated or deleted, so a
   * key leaked before does not come back with a restored admin (section 17). Their ids.
   */
  revokeKeysMadeBy(userId: number, at: string): Promise<number[]>
}

/** How a user proved who it is, as its sign-in event says. */
export type SignInMethod = 'password' | 'magic_link' | 'passkey' | 'totp' | 'recovery_code'

/**
 * A session or token in the audit log: the start of its stored id (the SHA-256 of its secret),
 * enough to match a sign-in with its logout, useless for signing in.
 */
const credentialTarget = (type: 'session' | 'access_token', storedId: string) => ({
  type,
  id: storedId.slice(0, 16),
})

/** The rules of sessions and access tokens, over a database's rows. */
export function createCredentialStore(
  rows: CredentialRows,
  transaction: Transaction<{ credentials: CredentialWrites; audit: AuditWrites }>,
  now: () => number,
): CredentialStore {
  const revoke = (type: 'session' | 'access_token', token: string, by: AuditSource) =>
    transaction(async (tx) => {
      const id = sha256Hex(token)
      const deleted =
        type === 'session'
          ? await tx.credentials.deleteSession(id)
          : await tx.credentials.deleteAccessToken(id)
      if (deleted) {
        await tx.audit.record(by, { action: `${type}.revoked`, target: credentialTarget(type, id) })
      }
    })
  return {
    async issue(userId, by, method) {
      const sessionToken = newSecret(SESSION_PREFIX)
      const accessToken = newSecret(ACCESS_TOKEN_PREFIX)
      const at = now()
      const session = sha256Hex(sessionToken)
      await transaction(async (tx) => {
        await tx.credentials.insertLogin(
          { id: session, userId, createdAt: at, expiresAt: at + SESSION_TTL_MS },
          {
            id: sha256Hex(accessToken),
            userId,
            createdAt: at,
            expiresAt: at + ACCESS_TOKEN_TTL_MS,
          },
        )
        await tx.audit.record(
          { ...by, actor: { type: 'user', id: String(userId) } },
          {
            action: 'session.created',
            target: credentialTarget('session', session),
            changes: { method: { before: null, after: method } },
          },
        )
      })
      return { sessionToken, accessToken }
    },

    async useSession(token) {
      if (!looksLikeSecret(token, SESSION_PREFIX)) return null
      const id = sha256Hex(token)
      const row = await rows.findSession(id)
      if (row === null) return null
      const at = now()
      if (row.expires_at <= at) {
        // Housekeeping nobody waits for; the hourly purge deletes it otherwise.
        rows.deleteSession(id).catch(() => {})
        return null
      }
      const user = withoutExpiry(row)
      if (row.expires_at - at >= SESSION_TTL_MS - SESSION_RENEW_INTERVAL_MS) {
        return { user, renewed: false }
      }
      // The renewed cookie is a promise about the stored expiry: it waits for the write. Only
      // forward, and only while the session exists (a logout meanwhile wins).
      const renewed = await rows.extendSession(id, at + SESSION_TTL_MS).catch(() => false)
      return { user, renewed }
    },

    async useAccessToken(token) {
      if (!looksLikeSecret(token, ACCESS_TOKEN_PREFIX)) return null
      const row = await rows.findAccessToken(sha256Hex(token))
      return row !== null && row.expires_at > now() ? withoutExpiry(row) : null
    },

    revokeSession: (token, by) => revoke('session', token, by),
    revokeAccessToken: (token, by) => revoke('access_token', token, by),
    purgeExpired: () => rows.deleteExpired(now()),
    signedInAt: (kind, token) => rows.createdAt(kind, sha256Hex(token)),
  }
}

function withoutExpiry(row: FoundCredential): SignedInUser {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    created_at: row.created_at,
    updated_at: row.updated_at,
    version: row.version,
    role: row.role,
  }
}
