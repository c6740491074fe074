import type { SQL } from 'bun'
import {
  type AccountTokenWrites,
  MAX_CODE_TRIES,
  type TokenRefusal,
  type UsedToken,
  type UsedTokenRow,
  usedTokenOfRow,
} from '../../accounts/tokens'

/**
 * The tokens in PostgreSQL, written in a unit's transaction. Spending is one conditional
 * UPDATE: of two instances confirming one token at once, the second waits for the first's row
 * lock and then finds it used.
 */
export function createPgAccountTokens(tx: SQL): AccountTokenWrites {
  return {
    async issue(token) {
      await tx`
        INSERT INTO account_tokens (user_id, flow, token_hash, code_hash, email, created_at, expires_at)
        VALUES (${token.userId}, ${token.flow}, ${token.tokenHash}, ${token.codeHash},
                ${token.email}, ${token.createdAt}, ${token.expiresAt})`
    },
    async use(flow, tokenHash, at): Promise<UsedToken | TokenRefusal> {
      const [spent] = await tx<UsedTokenRow[]>`
        UPDATE account_tokens SET used_at = ${at}
        WHERE token_hash = ${tokenHash} AND flow = ${flow} AND used_at IS NULL AND expires_at > ${at}
        RETURNING user_id, flow, email, created_at::float8 AS created_at`
      if (spent !== undefined) return usedTokenOfRow(spent)
      const [found] = await tx<{ used: boolean }[]>`
        SELECT used_at IS NOT NULL AS used FROM account_tokens
        WHERE token_hash = ${tokenHash} AND flow = ${flow}`
      if (found === undefined) return 'unknown'
      return found.used ? 'used' : 'expired'
    },
    async useCode(userId, codeHash, at): Promise<UsedToken | TokenRefusal> {
      const [live] = await tx<
        (UsedTokenRow & { id: number; token_hash: string; code_hash: string; tries: number })[]
      >`
        SELECT id, user_id, flow, email, created_at::float8 AS created_at, token_hash, code_hash, tries
        FROM account_tokens
        WHERE user_id = ${userId} AND flow = 'magic-link' AND code_hash IS NOT NULL
          AND used_at IS NULL AND expires_at > ${at}
        ORDER BY id DESC LIMIT 1 FOR UPDATE`
      if (live === undefined) return 'unknown'
      if (live.tries >= MAX_CODE_TRIES) return 'expired'
      if (codeHash(live.token_hash) !== live.code_hash) {
        await tx`UPDATE account_tokens SET tries = tries + 1 WHERE id = ${live.id}`
        return 'unknown'
      }
      await tx`UPDATE account_tokens SET used_at = ${at} WHERE id = ${live.id}`
      return usedTokenOfRow(live)
    },
    async revoke(userId, flows, at, issuedAfter = -1) {
      await tx`
        UPDATE account_tokens SET used_at = ${at}
        WHERE user_id = ${userId} AND used_at IS NULL AND flow = ANY(${[...flows]}::text[])
          AND created_at > ${issuedAfter}`
    },
    async undoHolder(emailKey, at) {
      const [row] = await tx<{ user_id: number }[]>`
        SELECT user_id FROM account_tokens
        WHERE flow = 'email-change-undo' AND used_at IS NULL AND expires_at > ${at}
          AND lower(email) = ${emailKey}
        LIMIT 1`
      return row?.user_id ?? null
    },
  }
}
