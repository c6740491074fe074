import { createHmac } from 'node:crypto'
import type { SQL } from 'bun'
import {
  answerOf,
  canonicalJson,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyClaims,
  type IdempotencyStore,
  type StoredAnswer,
} from '../../idempotency/store'
import { pgInstallSecret } from './settings'

interface StoredRow extends StoredAnswer {
  fingerprint: string
}

/** A claimed key's row until its answer is stored, in the same transaction. */
const CLAIMED = 0

/**
 * Idempotency keys in PostgreSQL. A claim is an insert in the unit's transaction: a concurrent
 * claim of the same key, from any instance, waits on the unique key until that transaction
 * ends, then finds the committed answer (and replays it) or, if the unit rolled back, claims
 * the key itself. An expired answer is taken over by the claim's upsert.
 */
export async function createPgIdempotencyStore(
  pool: SQL,
  now: () => number,
): Promise<IdempotencyStore & { inUnit(tx: SQL): IdempotencyClaims }> {
  const secret = await pgInstallSecret(pool, 'idempotency_hmac_key')

  const find = async (q: SQL, scope: string, key: string) => {
    const [row] = await q<StoredRow[]>`
      SELECT fingerprint, status, body, location FROM idempotency_keys
      WHERE scope = ${scope} AND key = ${key} AND created_at >= ${now() - IDEMPOTENCY_TTL_MS}
        AND status <> ${CLAIMED}`
    return row
  }

  return {
    inUnit: (tx) => ({
      async claim(scope, key, fingerprint) {
        const at = now()
        const claimed = await tx`
          INSERT INTO idempotency_keys (scope, key, fingerprint, status, body, location, created_at)
          VALUES (${scope}, ${key}, ${fingerprint}, ${CLAIMED}, '', NULL, ${at})
          ON CONFLICT (scope, key) DO UPDATE SET
            fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body,
            location = excluded.location, created_at = excluded.created_at
          WHERE idempotency_keys.created_at < ${at - IDEMPOTENCY_TTL_MS}
          RETURNING 1`
        if (claimed.length === 1) return null
        return answerOf(await find(tx, scope, key), key, fingerprint)
      },
      async complete(scope, key, _fingerprint, answer) {
        await tx`
          UPDATE idempotency_keys SET status = ${answer.status}, body = ${answer.body},
            location = ${answer.location}
          WHERE scope = ${scope} AND key = ${key}`
      },
    }),

    fingerprint(body: unknown): string {
      return createHmac('sha256', secret).update(canonicalJson(body)).digest('base64url')
    },

    async lookup(scope, key, fingerprint) {
      return answerOf(await find(pool, scope, key), key, fingerprint)
    },

    async purgeExpired(): Promise<void> {
      await pool`DELETE FROM idempotency_keys WHERE created_at < ${now() - IDEMPOTENCY_TTL_MS}`
    },
  }
}
