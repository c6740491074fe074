import { lt, sql } from 'drizzle-orm'
import {
  answerOf,
  canonicalJson,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyClaims,
  type IdempotencyStore,
  type StoredAnswer,
} from '../../idempotency/store'
import type { Store } from './connection'
import { firstUse } from './first-use'
import { idempotencyKeys } from './schema'
import { installSecret } from './settings'
import { settle } from './settle'

interface StoredRow extends StoredAnswer {
  fingerprint: string
}

/** The SQLite idempotency store, and its claims as a unit of work sees them. */
export interface SqliteIdempotencyStore extends IdempotencyStore {
  readonly inUnit: IdempotencyClaims
}

/**
 * Idempotency keys in SQLite. With one writer, a claim is a read on the writer (it sees
 * answers not yet committed, and no other unit runs between it and the unit's end).
 */
export function createSqliteIdempotencyStore(
  store: Store,
  now: () => number,
): SqliteIdempotencyStore {
  const { db, writes } = store
  const secret = installSecret(db, 'idempotency_hmac_key')
  const findText =
    'SELECT fingerprint, status, body, location FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at >= ?'
  // Before the work, committed answers (the reader); inside the write, the writer's view too.
  const findCommitted = store.reader.query<StoredRow, [string, string, number]>(findText)
  const findCurrent = db.$client.query<StoredRow, [string, string, number]>(findText)
  const save = firstUse(() =>
    db
      .insert(idempotencyKeys)
      .values({
        scope: sql.placeholder('scope'),
        key: sql.placeholder('key'),
        fingerprint: sql.placeholder('fingerprint'),
        status: sql.placeholder('status'),
        body: sql.placeholder('body'),
        location: sql.placeholder('location'),
        createdAt: sql.placeholder('createdAt'),
      })
      // An expired row for the same key may still be there; the new answer takes its place.
      .onConflictDoUpdate({
        target: [idempotencyKeys.scope, idempotencyKeys.key],
        set: {
          fingerprint: sql`excluded.fingerprint`,
          status: sql`excluded.status`,
          body: sql`excluded.body`,
          location: sql`excluded.location`,
          createdAt: sql`excluded.created_at`,
        },
      })
      .prepare(),
  )

  const findClaim = (scope: string, key: string, fingerprint: string) =>
    answerOf(findCurrent.get(scope, key, now() - IDEMPOTENCY_TTL_MS), key, fingerprint)

  return {
    inUnit: {
      claim: (scope, key, fingerprint) => settle(() => findClaim(scope, key, fingerprint)),
      complete: (scope, key, fingerprint, answer) =>
        settle(() => {
          save().run({ scope, key, fingerprint, ...answer, createdAt: now() })
        }),
    },

    fingerprint(body: unknown): string {
      return new Bun.CryptoHasher('sha256', secret).update(canonicalJson(body)).digest('base64url')
    },

    lookup: (scope, key, fingerprint) =>
      settle(() =>
        answerOf(findCommitted.get(scope, key, now() - IDEMPOTENCY_TTL_MS), key, fingerprint),
      ),

    async purgeExpired(): Promise<void> {
      await writes.run(() =>
        db
          .delete(idempotencyKeys)
          .where(lt(idempotencyKeys.createdAt, now() - IDEMPOTENCY_TTL_MS))
          .run(),
      )
    },
  }
}
