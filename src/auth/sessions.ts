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
  /** A new session and a new access token for a user who just proved who they are. */
  issue(userId: number): Promise<IssuedLogin>
  /** The session's user, extending it when it was last extended over an hour ago; null if not valid. */
  useSession(token: string): Promise<SessionState | null>
  /** The access token's user; null if unknown, expired or revoked. */
  useAccessToken(token: string): Promise<SignedInUser | null>
  revokeSession(token: string): Promise<void>
  revokeAccessToken(token: string): Promise<void>
  /** Deletes expired sessions and tokens (safe to run on every instance at once). */
  purgeExpired(): Promise<void>
}

/** The user of a credential row that was read with its expiry. */
export function withoutExpiry(row: SignedInUser & { expires_at: number }): SignedInUser {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    created_at: row.created_at,
    updated_at: row.updated_at,
    version: row.version,
  }
}
