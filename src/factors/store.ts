import type { TokenRefusal } from '../accounts/tokens'

/**
 * What a database keeps of second factors and sign-in ceremonies (CONTRACT section 15): row
 * operations only, always run inside a unit of work, written for a database without a single
 * writer (several instances on PostgreSQL): a TOTP step is taken, a recovery code used and a
 * challenge spent each by one conditional update, so of two at once exactly one wins.
 */
export interface FactorWrites {
  totpOf(userId: number): Promise<TotpRow | null>
  /** A new unconfirmed secret; replaces an unconfirmed one, never a confirmed one (false then). */
  putPendingTotp(userId: number, secret: string, at: number): Promise<boolean>
  /**
   * Confirms the pending secret with the step its first code belongs to (that code is then
   * spent). False when there is no pending secret, or the step was taken already.
   */
  confirmTotp(userId: number, step: number, at: number): Promise<boolean>
  /** Takes a confirmed secret's step: false when it (or a later one) was taken already. */
  takeTotpStep(userId: number, step: number): Promise<boolean>
  deleteTotp(userId: number): Promise<boolean>

  /** The user's codes become these (hashes); the old ones, used or not, are gone. */
  replaceRecoveryCodes(userId: number, hashes: readonly string[], at: number): Promise<void>
  /** Spends an unused code of the user: false when it is unknown or used. */
  useRecoveryCode(userId: number, hash: string, at: number): Promise<boolean>
  recoveryCodesLeft(userId: number): Promise<number>
  deleteRecoveryCodes(userId: number): Promise<void>

  insertPasskey(passkey: NewPasskey): Promise<PasskeyRow>
  passkeysOf(userId: number): Promise<PasskeyRow[]>
  passkeyByCredentialId(credentialId: string): Promise<PasskeyRow | null>
  /**
   * A sign-in with the passkey: its counter moves from `expected` to `counter` (a
   * compare-and-set, so two sign-ins with one counter value cannot both pass).
   */
  recordPasskeyUse(id: number, expected: number, counter: number, at: number): Promise<boolean>
  /** Marks a passkey whose counter went backwards (a cloned authenticator): refused from now. */
  flagPasskey(id: number, at: number): Promise<void>
  deletePasskey(userId: number, id: number): Promise<boolean>
  deletePasskeys(userId: number): Promise<number>

  /** Stores a ceremony's challenge (and forgets those expired a day ago). */
  insertChallenge(challenge: NewChallenge): Promise<void>
  /** A challenge not used and not expired, locked for this unit; otherwise why not. */
  liveChallenge(
    purpose: ChallengePurpose,
    hash: string,
    at: number,
  ): Promise<LiveChallenge | TokenRefusal>
  /** Counts a wrong answer against a challenge (an mfa_token's code). */
  countChallengeTry(id: number): Promise<void>
  /** Spends a challenge: false when another unit spent it first. */
  spendChallenge(id: number, at: number): Promise<boolean>
}

export interface TotpRow {
  secret: string
  createdAt: number
  confirmedAt: number | null
  lastStep: number
}

export interface NewPasskey {
  userId: number
  credentialId: string
  publicKey: string
  counter: number
  transports: readonly string[]
  name: string
  backedUp: boolean
  createdAt: number
}

export interface PasskeyRow extends NewPasskey {
  id: number
  lastUsedAt: number | null
  flaggedAt: number | null
}

/** The ceremonies a challenge belongs to: one is never accepted for another. */
export type ChallengePurpose = 'passkey-register' | 'passkey-login' | 'mfa'

export interface NewChallenge {
  hash: string
  purpose: ChallengePurpose
  userId: number | null
  createdAt: number
  expiresAt: number
}

export interface LiveChallenge {
  id: number
  userId: number | null
  tries: number
}

/** A passkey row as both databases return it (snake case, transports as JSON text). */
export interface PasskeyDbRow {
  id: number
  user_id: number
  credential_id: string
  public_key: string
  counter: number | string
  transports: string
  name: string
  backed_up: number | boolean
  created_at: number | string
  last_used_at: number | string | null
  flagged_at: number | string | null
}

const numberOrNull = (value: number | string | null) => (value === null ? null : Number(value))

export function passkeyOfRow(row: PasskeyDbRow): PasskeyRow {
  return {
    id: row.id,
    userId: row.user_id,
    credentialId: row.credential_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    backedUp: Boolean(row.backed_up),
    createdAt: Number(row.created_at),
    lastUsedAt: numberOrNull(row.last_used_at),
    flaggedAt: numberOrNull(row.flagged_at),
  }
}

export interface TotpDbRow {
  secret: string
  created_at: number | string
  confirmed_at: number | string | null
  last_step: number | string
}

export function totpOfRow(row: TotpDbRow): TotpRow {
  return {
    secret: row.secret,
    createdAt: Number(row.created_at),
    confirmedAt: numberOrNull(row.confirmed_at),
    lastStep: Number(row.last_step),
  }
}

/** Challenges expired this long ago are deleted when a new one is stored. */
export const CHALLENGE_KEEP_MS = 24 * 60 * 60 * 1000
