import { createHmac } from 'node:crypto'
import { lt, sql } from 'drizzle-orm'
import type { Store } from '../db/client'
import { idempotencyKeys } from '../db/schema'
import { installSecret } from '../db/settings'
import { fieldDetail } from '../errors/details'
import { conflict, validationFailed } from '../errors/errors'

/** How long a stored answer is replayed, as Stripe does. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/

export interface StoredAnswer {
  status: number
  body: string
  location: string | null
}

interface StoredRow extends StoredAnswer {
  fingerprint: string
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>

/**
 * Idempotency-Key bookkeeping. A key is scoped (to the caller and the route), remembered with
 * a fingerprint of the request body and the first successful answer, and replayed for 24 h.
 */
export function createIdempotencyStore(store: Store, now: () => number) {
  const { db, writes } = store
  const secret = installSecret(db, 'idempotency_hmac_key')
  const findText =
    'SELECT fingerprint, status, body, location FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at >= ?'
  // Before the work, committed answers (the reader); inside the write, the writer's view too.
  const findCommitted = store.reader.query<StoredRow, [string, string, number]>(findText)
  const findCurrent = db.$client.query<StoredRow, [string, string, number]>(findText)
  const save = db
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
    .prepare()

  function answerOf(row: StoredRow | null, key: string, fingerprint: string): StoredAnswer | null {
    if (row === null) return null
    if (row.fingerprint !== fingerprint) {
      throw conflict('This Idempotency-Key was already used with a different request body', [
        fieldDetail('Idempotency-Key', 'was used with a different request body', key),
      ])
    }
    return { status: row.status, body: row.body, location: row.location }
  }

  return {
    /** An HMAC of the body with keys sorted, so field order does not matter. */
    fingerprint(body: unknown): string {
      return createHmac('sha256', secret).update(canonicalJson(body)).digest('base64url')
    },

    /** The committed answer for this key if it is still live; CONFLICT if it was for another body. */
    lookup(scope: string, key: string, fingerprint: string): StoredAnswer | null {
      return answerOf(findCommitted.get(scope, key, now() - IDEMPOTENCY_TTL_MS), key, fingerprint)
    },

    /**
     * Runs `work` unless the key already has an answer, and stores its answer, all in one write
     * (a savepoint of the group commit, on the writer, so it sees answers not yet committed):
     * two concurrent requests with one key cannot both do the work. `work` runs inside that
     * write and must use the services' `inWrite` functions.
     */
    once(
      scope: string,
      key: string,
      fingerprint: string,
      work: () => StoredAnswer,
    ): Promise<{ replayed: boolean; answer: StoredAnswer }> {
      return writes.run(() => {
        const since = now() - IDEMPOTENCY_TTL_MS
        const stored = answerOf(findCurrent.get(scope, key, since), key, fingerprint)
        if (stored !== null) return { replayed: true, answer: stored }
        const answer = work()
        save.run({ scope, key, fingerprint, ...answer, createdAt: now() })
        return { replayed: false, answer }
      })
    },

    /** Deletes answers older than 24 h. */
    purgeExpired(): void {
      db.delete(idempotencyKeys)
        .where(lt(idempotencyKeys.createdAt, now() - IDEMPOTENCY_TTL_MS))
        .run()
    },
  }
}

/** The request's Idempotency-Key, null when absent; VALIDATION_ERROR when malformed. */
export function idempotencyKeyOf(request: Request): string | null {
  const key = request.headers.get('idempotency-key')
  if (key === null) return null
  if (!KEY_FORMAT.test(key)) {
    throw validationFailed([
      fieldDetail('Idempotency-Key', 'must be 1–255 visible ASCII characters', key),
    ])
  }
  return key
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      )
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value)
}
