import type { SQL } from 'bun'
import type {
  CredentialRow,
  CredentialRows,
  CredentialWrites,
  FoundCredential,
} from '../../auth/sessions'
import { type Stored, withIsoTimestamps } from './timestamps'

/**
 * Sessions and access tokens in PostgreSQL. Every use reads the shared database, so a logout,
 * a revocation or a password change on any instance is refused on all of them at once. A
 * renewal is a conditional update that only moves forward: when two instances renew one
 * session together, both answers carry a valid expiry.
 */
export function createPgCredentialRows(pool: SQL): CredentialRows & {
  inUnit(tx: SQL): CredentialWrites
} {
  // The credential and its user in one round trip; bigint columns come back as float8 numbers.
  // `table` is one of two literals, never client input.
  const find = async (table: 'sessions' | 'access_tokens', id: string) => {
    const [row] = await pool.unsafe<Stored<FoundCredential>[]>(
      `SELECT u.id, u.name, u.email, u.created_at, u.updated_at, u.version, u.role,
              c.expires_at::float8 AS expires_at
       FROM ${table} c JOIN users u ON u.id = c.user_id WHERE c.id = $1`,
      [id],
    )
    return row === undefined ? null : withIsoTimestamps<FoundCredential>(row)
  }

  const insertLogin = async (tx: SQL, session: CredentialRow, token: CredentialRow) => {
    await tx`INSERT INTO sessions (id, user_id, created_at, expires_at)
             VALUES (${session.id}, ${session.userId}, ${session.createdAt}, ${session.expiresAt})`
    await tx`INSERT INTO access_tokens (id, user_id, created_at, expires_at)
             VALUES (${token.id}, ${token.userId}, ${token.createdAt}, ${token.expiresAt})`
  }
  const deleteSession = async (q: SQL, id: string) =>
    (await q`DELETE FROM sessions WHERE id = ${id}`).count > 0
  const deleteAccessToken = async (q: SQL, id: string) =>
    (await q`DELETE FROM access_tokens WHERE id = ${id}`).count > 0
  return {
    inUnit: (tx) => ({
      async revokeAllForUser(userId) {
        await tx`DELETE FROM sessions WHERE user_id = ${userId}`
        await tx`DELETE FROM access_tokens WHERE user_id = ${userId}`
      },
      async revokeKeysMadeBy(userId, at) {
        const rows = await tx<{ id: number }[]>`
          UPDATE api_keys SET revoked_at = ${at}
          WHERE created_by_user = ${userId} AND revoked_at IS NULL RETURNING id`
        return rows.map((row) => row.id).sort((a, b) => a - b)
      },
      insertLogin: (session, token) => insertLogin(tx, session, token),
      deleteSession: (id) => deleteSession(tx, id),
      deleteAccessToken: (id) => deleteAccessToken(tx, id),
    }),
    async createdAt(kind, id) {
      const [row] =
        kind === 'session'
          ? await pool<
              { at: number }[]
            >`SELECT created_at::float8 AS at FROM sessions WHERE id = ${id}`
          : await pool<
              { at: number }[]
            >`SELECT created_at::float8 AS at FROM access_tokens WHERE id = ${id}`
      return row?.at ?? null
    },
    async insertLogin(session, token) {
      await pool.begin((tx) => insertLogin(tx, session, token))
    },
    findSession: (id) => find('sessions', id),
    findAccessToken: (id) => find('access_tokens', id),
    async extendSession(id, expiresAt) {
      const rows = await pool`
        UPDATE sessions SET expires_at = greatest(expires_at, ${expiresAt})
        WHERE id = ${id} RETURNING 1`
      return rows.length === 1
    },
    deleteSession: (id) => deleteSession(pool, id),
    deleteAccessToken: (id) => deleteAccessToken(pool, id),
    // One statement per table: every instance may run it at once; each row goes once.
    async deleteExpired(at) {
      await pool`DELETE FROM sessions WHERE expires_at <= ${at}`
      await pool`DELETE FROM access_tokens WHERE expires_at <= ${at}`
    },
  }
}
