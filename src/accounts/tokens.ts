import { newSecret, sha256Hex } from '../auth/tokens'

/**
 * The flows that send a single-use token (CONTRACT section 14), and the undo link of an email
 * change (section 17) that the old address is sent.
 */
export const TOKEN_FLOWS = [
  'verify-email',
  'password-reset',
  'magic-link',
  'email-change',
  'invitation',
  'email-change-undo',
] as const
export type TokenFlow = (typeof TOKEN_FLOWS)[number]

/**
 * The links a new password, a new address or a deactivation ends. Not an email change's undo
 * link: whoever moved the address could otherwise take the undo away by resetting the password
 * from the new address, or by moving the account on again. Only an undo ends undo links.
 */
export const FLOWS_A_CHANGE_ENDS: readonly TokenFlow[] = TOKEN_FLOWS.filter(
  (flow) => flow !== 'email-change-undo',
)

const MINUTE = 60 * 1000
const DAY = 24 * 60 * MINUTE

/**
 * How long each flow's token lasts: a reset or a magic link signs somebody in, so it is short;
 * a verification or an invitation waits in an inbox for days, and an undo link for the week
 * CONTRACT section 17 gives the old address to notice a change it did not make.
 */
export const TOKEN_TTL_MS: Record<TokenFlow, number> = {
  'verify-email': 7 * DAY,
  'password-reset': 15 * MINUTE,
  'magic-link': 15 * MINUTE,
  'email-change': 7 * DAY,
  invitation: 7 * DAY,
  'email-change-undo': 7 * DAY,
}

/** A magic link's 6-digit code takes this many wrong tries, then the code is spent. */
export const MAX_CODE_TRIES = 5

/** Tokens in links carry this prefix (so a leaked one is recognisable). */
export const ACCOUNT_TOKEN_PREFIX = 'rat_'

/** A token as a flow writes it: only hashes are kept. */
export interface NewToken {
  userId: number
  flow: TokenFlow
  tokenHash: string
  /** SHA-256 of the magic link's code (with the token hash), or null. */
  codeHash: string | null
  /** The address the token went to (an email change's new address). */
  email: string
  createdAt: number
  expiresAt: number
}

/** A token that was just used: whose it is and where it was sent. */
export interface UsedToken {
  userId: number
  flow: TokenFlow
  email: string
  /** When it was issued (epoch ms): a later password or email change ends it. */
  createdAt: number
}

export type TokenRefusal = 'unknown' | 'used' | 'expired'

/** A spent token's row as both databases read it back. */
export interface UsedTokenRow {
  user_id: number
  flow: TokenFlow
  email: string
  created_at: number
}

export function usedTokenOfRow(row: UsedTokenRow): UsedToken {
  return {
    userId: row.user_id,
    flow: row.flow,
    email: row.email,
    // PostgreSQL's bigint arrives as float8 (cast in the query); SQLite's as a number.
    createdAt: Number(row.created_at),
  }
}

/**
 * The tokens' writes, always inside the unit of work of what they allow, so a token is spent
 * exactly when its change commits. Written for a database without a single writer: `use` is
 * one conditional update (two confirmations of one token at once: one wins, the other sees it
 * used).
 */
export interface AccountTokenWrites {
  issue(token: NewToken): Promise<void>
  /** Spends an unused, unexpired token of the flow; otherwise says why not. */
  use(flow: TokenFlow, tokenHash: string, at: number): Promise<UsedToken | TokenRefusal>
  /**
   * Tries a magic-link code of a user: its newest live code counts a try, and a match spends
   * it. `unknown` when it has no live code or a wrong one, `expired` once the tries are used up.
   * The try is written even when the code is wrong: run it in a unit that commits either way.
   */
  useCode(
    userId: number,
    codeHash: (tokenHash: string) => string,
    at: number,
  ): Promise<UsedToken | TokenRefusal>
  /**
   * Ends every unused token of these flows of the user; with `issuedAfter`, only those issued
   * after it (an undo ends the undo links of later moves, never of earlier ones).
   */
  revoke(
    userId: number,
    flows: readonly TokenFlow[],
    at: number,
    issuedAfter?: number,
  ): Promise<void>
  /**
   * The account an address is held for: one that moved away from it and whose undo link to it
   * is still unused and unexpired at `at` (null: none). Nobody else takes the address meanwhile,
   * so an undo cannot be blocked by parking another account there (`emailKey` lower-cased).
   */
  undoHolder(emailKey: string, at: number): Promise<number | null>
}

/** A fresh token and the hash kept of it. */
export function newAccountToken(): { token: string; tokenHash: string } {
  const token = newSecret(ACCOUNT_TOKEN_PREFIX)
  return { token, tokenHash: sha256Hex(token) }
}

/** A 6-digit code, uniform (no modulo bias), and its hash bound to its token. */
export function newCode(tokenHash: string): { code: string; codeHash: string } {
  const code = uniformDigits(6)
  return { code, codeHash: codeHashOf(tokenHash, code) }
}

export function codeHashOf(tokenHash: string, code: string): string {
  return sha256Hex(`${tokenHash}:${code}`)
}

function uniformDigits(length: number): string {
  const limit = 10 ** length
  // The largest multiple of `limit` below 2^32: values at or above it are drawn again.
  const ceiling = Math.floor(2 ** 32 / limit) * limit
  const word = new Uint32Array(1)
  for (;;) {
    crypto.getRandomValues(word)
    const value = word[0] as number
    if (value < ceiling) return String(value % limit).padStart(length, '0')
  }
}
