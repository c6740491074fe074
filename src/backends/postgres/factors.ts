import type { SQL } from 'bun'
import type { TokenRefusal } from '../../accounts/tokens'
import { UniqueViolation } from '../../db/conflict'
import {
  CHALLENGE_KEEP_MS,
  type FactorWrites,
  type LiveChallenge,
  type PasskeyDbRow,
  passkeyOfRow,
  type TotpDbRow,
  totpOfRow,
} from '../../factors/store'

/**
 * Second factors and ceremonies in PostgreSQL, in a unit's transaction. Every single-use thing
 * is spent by a conditional UPDATE (a TOTP step, a recovery code, a challenge), and a live
 * challenge is read FOR UPDATE, so two instances finishing one ceremony at once: one wins, the
 * other waits for its row lock and then finds it spent.
 */
export function createPgFactors(tx: SQL): FactorWrites {
  const passkeyColumns =
    tx.unsafe(`id, user_id, credential_id, public_key, counter::float8 AS counter,
    transports, name, backed_up, created_at::float8 AS created_at,
    last_used_at::float8 AS last_used_at, flagged_at::float8 AS flagged_at`)
  return {
    async totpOf(userId) {
      const [row] = await tx<TotpDbRow[]>`
        SELECT secret, created_at::float8 AS created_at, confirmed_at::float8 AS confirmed_at,
               last_step::float8 AS last_step
        FROM totp_factors WHERE user_id = ${userId}`
      return row === undefined ? null : totpOfRow(row)
    },
    async putPendingTotp(userId, secret, at) {
      const rows = await tx`
        INSERT INTO totp_factors (user_id, secret, created_at) VALUES (${userId}, ${secret}, ${at})
        ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret,
          created_at = EXCLUDED.created_at, last_step = 0
        WHERE totp_factors.confirmed_at IS NULL
        RETURNING user_id`
      return rows.length === 1
    },
    async confirmTotp(userId, step, at) {
      const rows = await tx`
        UPDATE totp_factors SET confirmed_at = ${at}, last_step = ${step}
        WHERE user_id = ${userId} AND confirmed_at IS NULL AND last_step < ${step}
        RETURNING 1`
      return rows.length === 1
    },
    async takeTotpStep(userId, step) {
      const rows = await tx`
        UPDATE totp_factors SET last_step = ${step}
        WHERE user_id = ${userId} AND confirmed_at IS NOT NULL AND last_step < ${step}
        RETURNING 1`
      return rows.length === 1
    },
    async deleteTotp(userId) {
      const rows = await tx`DELETE FROM totp_factors WHERE user_id = ${userId} RETURNING 1`
      return rows.length === 1
    },
    async replaceRecoveryCodes(userId, hashes, at) {
      await tx`DELETE FROM recovery_codes WHERE user_id = ${userId}`
      if (hashes.length === 0) return
      await tx`
        INSERT INTO recovery_codes (user_id, code_hash, created_at)
        SELECT ${userId}, hash, ${at} FROM unnest(${[...hashes]}::text[]) AS hash`
    },
    async useRecoveryCode(userId, hash, at) {
      const rows = await tx`
        UPDATE recovery_codes SET used_at = ${at}
        WHERE id = (SELECT id FROM recovery_codes
                    WHERE user_id = ${userId} AND code_hash = ${hash} AND used_at IS NULL
                    LIMIT 1 FOR UPDATE)
          AND used_at IS NULL
        RETURNING 1`
      return rows.length === 1
    },
    async recoveryCodesLeft(userId) {
      const [row] = await tx<{ left: number }[]>`
        SELECT count(*)::int AS left FROM recovery_codes
        WHERE user_id = ${userId} AND used_at IS NULL`
      return row?.left ?? 0
    },
    async deleteRecoveryCodes(userId) {
      await tx`DELETE FROM recovery_codes WHERE user_id = ${userId}`
    },
    async insertPasskey(passkey) {
      const [row] = await tx<PasskeyDbRow[]>`
        INSERT INTO passkeys (user_id, credential_id, public_key, counter, transports, name,
          backed_up, created_at)
        VALUES (${passkey.userId}, ${passkey.credentialId}, ${passkey.publicKey},
          ${passkey.counter}, ${JSON.stringify(passkey.transports)}, ${passkey.name},
          ${passkey.backedUp}, ${passkey.createdAt})
        ON CONFLICT (credential_id) DO NOTHING
        RETURNING ${passkeyColumns}`
      if (row === undefined) throw new UniqueViolation('credential_id')
      return passkeyOfRow(row)
    },
    async passkeysOf(userId) {
      const rows = await tx<PasskeyDbRow[]>`
        SELECT ${passkeyColumns} FROM passkeys WHERE user_id = ${userId} ORDER BY id`
      return rows.map(passkeyOfRow)
    },
    async passkeyByCredentialId(credentialId) {
      const [row] = await tx<PasskeyDbRow[]>`
        SELECT ${passkeyColumns} FROM passkeys WHERE credential_id = ${credentialId}`
      return row === undefined ? null : passkeyOfRow(row)
    },
    async recordPasskeyUse(id, expected, counter, at) {
      const rows = await tx`
        UPDATE passkeys SET counter = ${counter}, last_used_at = ${at}
        WHERE id = ${id} AND counter = ${expected} RETURNING 1`
      return rows.length === 1
    },
    async flagPasskey(id, at) {
      await tx`UPDATE passkeys SET flagged_at = ${at} WHERE id = ${id} AND flagged_at IS NULL`
    },
    async deletePasskey(userId, id) {
      const rows = await tx`
        DELETE FROM passkeys WHERE user_id = ${userId} AND id = ${id} RETURNING 1`
      return rows.length === 1
    },
    async deletePasskeys(userId) {
      const rows = await tx`DELETE FROM passkeys WHERE user_id = ${userId} RETURNING 1`
      return rows.length
    },
    async insertChallenge(c) {
      await tx`DELETE FROM auth_challenges WHERE expires_at < ${c.createdAt - CHALLENGE_KEEP_MS}`
      await tx`
        INSERT INTO auth_challenges (hash, purpose, user_id, created_at, expires_at)
        VALUES (${c.hash}, ${c.purpose}, ${c.userId}, ${c.createdAt}, ${c.expiresAt})`
    },
    async liveChallenge(purpose, hash, at): Promise<LiveChallenge | TokenRefusal> {
      const [row] = await tx<
        { id: number; user_id: number | null; tries: number; used: boolean; expires_at: number }[]
      >`
        SELECT id, user_id, tries, used_at IS NOT NULL AS used, expires_at::float8 AS expires_at
        FROM auth_challenges WHERE hash = ${hash} AND purpose = ${purpose} FOR UPDATE`
      if (row === undefined) return 'unknown'
      if (row.used) return 'used'
      if (row.expires_at <= at) return 'expired'
      return { id: row.id, userId: row.user_id, tries: row.tries }
    },
    async countChallengeTry(id) {
      await tx`UPDATE auth_challenges SET tries = tries + 1 WHERE id = ${id}`
    },
    async spendChallenge(id, at) {
      const rows = await tx`
        UPDATE auth_challenges SET used_at = ${at} WHERE id = ${id} AND used_at IS NULL
        RETURNING 1`
      return rows.length === 1
    },
  }
}
