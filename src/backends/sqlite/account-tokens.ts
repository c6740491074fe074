import {
  type AccountTokenWrites,
  MAX_CODE_TRIES,
  type TokenFlow,
  type TokenRefusal,
  type UsedToken,
  type UsedTokenRow,
  usedTokenOfRow,
} from '../../accounts/tokens'
import type { Store } from './connection'
import { settle } from './settle'

/** The tokens in SQLite; every write runs inside a unit of work (on the writer). */
export function createSqliteAccountTokens(store: Store): AccountTokenWrites {
  const writer = store.db.$client
  const insert = writer.query(
    `INSERT INTO account_tokens (user_id, flow, token_hash, code_hash, email, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  )
  const spend = writer.query<UsedTokenRow, [string, TokenFlow, number]>(
    `UPDATE account_tokens SET used_at = ?3
     WHERE token_hash = ?1 AND flow = ?2 AND used_at IS NULL AND expires_at > ?3
     RETURNING user_id, flow, email, created_at`,
  )
  const stateOf = writer.query<{ used_at: number | null }, [string, TokenFlow]>(
    'SELECT used_at FROM account_tokens WHERE token_hash = ? AND flow = ?',
  )
  const liveCode = writer.query<
    UsedTokenRow & { id: number; token_hash: string; code_hash: string; tries: number },
    [number, number]
  >(
    `SELECT id, user_id, flow, email, created_at, token_hash, code_hash, tries FROM account_tokens
     WHERE user_id = ? AND flow = 'magic-link' AND code_hash IS NOT NULL AND used_at IS NULL
       AND expires_at > ? ORDER BY id DESC LIMIT 1`,
  )
  const countTry = writer.query('UPDATE account_tokens SET tries = tries + 1 WHERE id = ?')
  const spendById = writer.query('UPDATE account_tokens SET used_at = ? WHERE id = ?')
  const revoke = writer.query<Record<string, never>, [number, number, string, number]>(
    `UPDATE account_tokens SET used_at = ?2
     WHERE user_id = ?1 AND used_at IS NULL AND flow IN (SELECT value FROM json_each(?3))
       AND created_at > ?4`,
  )
  const undoHolder = writer.query<{ user_id: number }, [string, number]>(
    `SELECT user_id FROM account_tokens
     WHERE flow = 'email-change-undo' AND used_at IS NULL AND expires_at > ?2
       AND lower(email) = ?1
     LIMIT 1`,
  )
  return {
    issue: (token) =>
      settle(() => {
        insert.run(
          token.userId,
          token.flow,
          token.tokenHash,
          token.codeHash,
          token.email,
          token.createdAt,
          token.expiresAt,
        )
      }),
    use: (flow, tokenHash, at) =>
      settle((): UsedToken | TokenRefusal => {
        const spent = spend.get(tokenHash, flow, at)
        if (spent !== null) return usedTokenOfRow(spent)
        const found = stateOf.get(tokenHash, flow)
        if (found === null) return 'unknown'
        return found.used_at === null ? 'expired' : 'used'
      }),
    useCode: (userId, codeHash, at) =>
      settle((): UsedToken | TokenRefusal => {
        const live = liveCode.get(userId, at)
        if (live === null) return 'unknown'
        if (live.tries >= MAX_CODE_TRIES) return 'expired'
        if (codeHash(live.token_hash) !== live.code_hash) {
          countTry.run(live.id)
          return 'unknown'
        }
        spendById.run(at, live.id)
        return usedTokenOfRow(live)
      }),
    revoke: (userId, flows, at, issuedAfter = -1) =>
      settle(() => {
        revoke.run(userId, at, JSON.stringify(flows), issuedAfter)
      }),
    undoHolder: (emailKey, at) => settle(() => undoHolder.get(emailKey, at)?.user_id ?? null),
  }
}
