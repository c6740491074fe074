import type { TokenRefusal } from '../../accounts/tokens'
import { UniqueViolation } from '../../db/conflict'
import {
  CHALLENGE_KEEP_MS,
  type ChallengePurpose,
  type FactorWrites,
  type LiveChallenge,
  type PasskeyDbRow,
  passkeyOfRow,
  type TotpDbRow,
  totpOfRow,
} from '../../factors/store'
import type { Store } from './connection'
import { settle } from './settle'

const PASSKEY_COLUMNS = `id, user_id, credential_id, public_key, counter, transports, name,
  backed_up, created_at, last_used_at, flagged_at`

/** Second factors and ceremonies in SQLite; every call runs in a unit of work (the writer). */
export function createSqliteFactors(store: Store): FactorWrites {
  const db = store.db.$client
  const totpOf = db.query<TotpDbRow, [number]>(
    'SELECT secret, created_at, confirmed_at, last_step FROM totp_factors WHERE user_id = ?',
  )
  const putPending = db.query<{ user_id: number }, [number, string, number]>(
    `INSERT INTO totp_factors (user_id, secret, created_at) VALUES (?1, ?2, ?3)
     ON CONFLICT (user_id) DO UPDATE SET secret = ?2, created_at = ?3, last_step = 0
       WHERE totp_factors.confirmed_at IS NULL
     RETURNING user_id`,
  )
  const confirm = db.query(
    `UPDATE totp_factors SET confirmed_at = ?3, last_step = ?2
     WHERE user_id = ?1 AND confirmed_at IS NULL AND last_step < ?2`,
  )
  const takeStep = db.query(
    `UPDATE totp_factors SET last_step = ?2
     WHERE user_id = ?1 AND confirmed_at IS NOT NULL AND last_step < ?2`,
  )
  const deleteTotp = db.query('DELETE FROM totp_factors WHERE user_id = ?')
  const deleteCodes = db.query('DELETE FROM recovery_codes WHERE user_id = ?')
  const insertCode = db.query(
    'INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)',
  )
  const useCode = db.query(
    `UPDATE recovery_codes SET used_at = ?3
     WHERE id = (SELECT id FROM recovery_codes
                 WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NULL LIMIT 1)`,
  )
  const codesLeft = db.query<{ left: number }, [number]>(
    'SELECT count(*) AS left FROM recovery_codes WHERE user_id = ? AND used_at IS NULL',
  )
  const insertPasskey = db.query<PasskeyDbRow, (string | number | null)[]>(
    `INSERT INTO passkeys (user_id, credential_id, public_key, counter, transports, name,
       backed_up, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING
     RETURNING ${PASSKEY_COLUMNS}`,
  )
  const passkeysOf = db.query<PasskeyDbRow, [number]>(
    `SELECT ${PASSKEY_COLUMNS} FROM passkeys WHERE user_id = ? ORDER BY id`,
  )
  const byCredential = db.query<PasskeyDbRow, [string]>(
    `SELECT ${PASSKEY_COLUMNS} FROM passkeys WHERE credential_id = ?`,
  )
  const recordUse = db.query(
    'UPDATE passkeys SET counter = ?3, last_used_at = ?4 WHERE id = ?1 AND counter = ?2',
  )
  const flag = db.query('UPDATE passkeys SET flagged_at = ?2 WHERE id = ?1 AND flagged_at IS NULL')
  const deletePasskey = db.query('DELETE FROM passkeys WHERE user_id = ? AND id = ?')
  const deletePasskeys = db.query('DELETE FROM passkeys WHERE user_id = ?')
  const insertChallenge = db.query(
    `INSERT INTO auth_challenges (hash, purpose, user_id, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?)`,
  )
  const forgetChallenges = db.query('DELETE FROM auth_challenges WHERE expires_at < ?')
  const challenge = db.query<
    {
      id: number
      user_id: number | null
      tries: number
      used_at: number | null
      expires_at: number
    },
    [string, string]
  >(
    `SELECT id, user_id, tries, used_at, expires_at FROM auth_challenges
     WHERE hash = ? AND purpose = ?`,
  )
  const countTry = db.query('UPDATE auth_challenges SET tries = tries + 1 WHERE id = ?')
  const spend = db.query(
    'UPDATE auth_challenges SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL',
  )

  return {
    totpOf: (userId) =>
      settle(() => {
        const row = totpOf.get(userId)
        return row === null ? null : totpOfRow(row)
      }),
    putPendingTotp: (userId, secret, at) =>
      settle(() => putPending.get(userId, secret, at) !== null),
    confirmTotp: (userId, step, at) => settle(() => confirm.run(userId, step, at).changes === 1),
    takeTotpStep: (userId, step) => settle(() => takeStep.run(userId, step).changes === 1),
    deleteTotp: (userId) => settle(() => deleteTotp.run(userId).changes === 1),
    replaceRecoveryCodes: (userId, hashes, at) =>
      settle(() => {
        deleteCodes.run(userId)
        for (const hash of hashes) insertCode.run(userId, hash, at)
      }),
    useRecoveryCode: (userId, hash, at) =>
      settle(() => useCode.run(userId, hash, at).changes === 1),
    recoveryCodesLeft: (userId) => settle(() => codesLeft.get(userId)?.left ?? 0),
    deleteRecoveryCodes: (userId) =>
      settle(() => {
        deleteCodes.run(userId)
      }),
    insertPasskey: (passkey) =>
      settle(() => {
        const row = insertPasskey.get(
          passkey.userId,
          passkey.credentialId,
          passkey.publicKey,
          passkey.counter,
          JSON.stringify(passkey.transports),
          passkey.name,
          passkey.backedUp ? 1 : 0,
          passkey.createdAt,
        )
        if (row === null) throw new UniqueViolation('credential_id')
        return passkeyOfRow(row)
      }),
    passkeysOf: (userId) => settle(() => passkeysOf.all(userId).map(passkeyOfRow)),
    passkeyByCredentialId: (credentialId) =>
      settle(() => {
        const row = byCredential.get(credentialId)
        return row === null ? null : passkeyOfRow(row)
      }),
    recordPasskeyUse: (id, expected, counter, at) =>
      settle(() => recordUse.run(id, expected, counter, at).changes === 1),
    flagPasskey: (id, at) =>
      settle(() => {
        flag.run(id, at)
      }),
    deletePasskey: (userId, id) => settle(() => deletePasskey.run(userId, id).changes === 1),
    deletePasskeys: (userId) => settle(() => deletePasskeys.run(userId).changes),
    insertChallenge: (c) =>
      settle(() => {
        forgetChallenges.run(c.createdAt - CHALLENGE_KEEP_MS)
        insertChallenge.run(c.hash, c.purpose, c.userId, c.createdAt, c.expiresAt)
      }),
    liveChallenge: (purpose: ChallengePurpose, hash, at) =>
      settle((): LiveChallenge | TokenRefusal => {
        const row = challenge.get(hash, purpose)
        if (row === null) return 'unknown'
        if (row.used_at !== null) return 'used'
        if (row.expires_at <= at) return 'expired'
        return { id: row.id, userId: row.user_id, tries: row.tries }
      }),
    countChallengeTry: (id) =>
      settle(() => {
        countTry.run(id)
      }),
    spendChallenge: (id, at) => settle(() => spend.run(id, at).changes === 1),
  }
}
