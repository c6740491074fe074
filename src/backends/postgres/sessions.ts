import type { SQL } from 'bun'
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_MS,
  type CredentialStore,
  type IssuedLogin,
  SESSION_PREFIX,
  SESSION_RENEW_INTERVAL_MS,
  SESSION_TTL_MS,
  type SessionState,
  type SignedInUser,
  withoutExpiry,
} from '../../auth/sessions'
import { looksLikeSecret, newSecret, sha256Hex } from '../../auth/tokens'
import { type Stored, withIsoTimestamps } from './timestamps'

type Found = SignedInUser & { expires_at: number }

/**
 * Sessions and access tokens in PostgreSQL (see CredentialStore). Every use reads the shared
 * database, so a logout, a revocation or a password change on any instance is refused on all
 * of them at once. A session's renewal is a conditional update: when two instances renew the
 * same session together, both answers carry a valid expiry.
 */
export function createPgCredentialStore(pool: SQL, now: () => number): CredentialStore {
  // The credential and its user in one round trip; bigint columns come back as float8 numbers.
  // `table` is one of two literals, never client input.
  const find = async (table: 'sessions' | 'access_tokens', id: string) => {
    const [row] = await pool.unsafe<Stored<Found>[]>(
      `SELECT u.id, u.name, u.email, u.created_at, u.updated_at, u.version,
              c.expires_at::float8 AS expires_at
       FROM ${table} c JOIN users u ON u.id = c.user_id WHERE c.id = $1`,
      [id],
    )
    return row === undefined ? null : withIsoTimestamps<Found>(row)
  }

  return {
    async issue(userId: number): Promise<IssuedLogin> {
      const sessionToken = newSecret(SESSION_PREFIX)
      const accessToken = newSecret(ACCESS_TOKEN_PREFIX)
      const at = now()
      await pool.begin(async (tx) => {
        await tx`INSERT INTO sessions (id, user_id, created_at, expires_at)
                 VALUES (${sha256Hex(sessionToken)}, ${userId}, ${at}, ${at + SESSION_TTL_MS})`
        await tx`INSERT INTO access_tokens (id, user_id, created_at, expires_at)
                 VALUES (${sha256Hex(accessToken)}, ${userId}, ${at}, ${at + ACCESS_TOKEN_TTL_MS})`
      })
      return { sessionToken, accessToken }
    },

    async useSession(token: string): Promise<SessionState | null> {
      if (!looksLikeSecret(token, SESSION_PREFIX)) return null
      const id = sha256Hex(token)
      const row = await find('sessions', id)
      const at = now()
      if (row === null) return null
      if (row.expires_at <= at) {
        // Housekeeping nobody waits for; the purge deletes it otherwise.
        pool`DELETE FROM sessions WHERE id = ${id}`.catch(() => {})
        return null
      }
      const user = withoutExpiry(row)
      if (row.expires_at - at >= SESSION_TTL_MS - SESSION_RENEW_INTERVAL_MS) {
        return { user, renewed: false }
      }
      // Only forward, and only while it still exists (a logout meanwhile wins).
      const renewed = await pool`
        UPDATE sessions SET expires_at = greatest(expires_at, ${at + SESSION_TTL_MS})
        WHERE id = ${id} RETURNING 1`.then(
        (rows: unknown[]) => rows.length === 1,
        () => false,
      )
      return { user, renewed }
    },

    async useAccessToken(token: string): Promise<SignedInUser | null> {
      if (!looksLikeSecret(token, ACCESS_TOKEN_PREFIX)) return null
      const row = await find('access_tokens', sha256Hex(token))
      return row !== null && row.expires_at > now() ? withoutExpiry(row) : null
    },

    async revokeSession(token: string): Promise<void> {
      await pool`DELETE FROM sessions WHERE id = ${sha256Hex(token)}`
    },

    async revokeAccessToken(token: string): Promise<void> {
      await pool`DELETE FROM access_tokens WHERE id = ${sha256Hex(token)}`
    },

    // One statement per table: every instance may run it at once; each row goes once.
    async purgeExpired(): Promise<void> {
      const at = now()
      await pool`DELETE FROM sessions WHERE expires_at <= ${at}`
      await pool`DELETE FROM access_tokens WHERE expires_at <= ${at}`
    },
  }
}
