import { createHmac } from 'node:crypto'
import { and, eq, gte, lt, sql } from 'drizzle-orm'
import type { Db } from '../db/client'
import { idempotencyKeys } from '../db/schema'
import { installSecret } from '../db/settings'
import { conflict, validationFailed } from '../http/errors'
import { fieldDetail } from '../http/validation'

/** How long a stored answer is replayed, as Stripe does. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/

export interface StoredAnswer {
  status: number
  body: string
  location: string | null
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>

/**
 * Idempotency-Key bookkeeping. A key is scoped (to the caller and the route), remembered with
 * a fingerprint of the request body and the first successful answer, and replayed for 24 h.
 */
export function createIdempotencyStore(db: Db, now: () => number) {
  const secret = installSecret(db, 'idempotency_hmac_key')
  const find = db
    .select()
    .from(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.scope, sql.placeholder('scope')),
        eq(idempotencyKeys.key, sql.placeholder('key')),
        gte(idempotencyKeys.createdAt, sql.placeholder('since')),
      ),
    )
    .prepare()
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

  /** The stored answer for this key if it is still live; CONFLICT if it was for another body. */
  function lookup(scope: string, key: string, fingerprint: string): StoredAnswer | null {
    const row = find.get({ scope, key, since: now() - IDEMPOTENCY_TTL_MS })
    if (row === undefined) return null
    if (row.fingerprint !== fingerprint) {
      throw conflict('This Idempotency-Key was already used with a different request body', [
        { field: 'Idempotency-Key', message: 'was used with a different request body' },
      ])
    }
    return { status: row.status, body: row.body, location: row.location }
  }

  return {
    /** An HMAC of the body with keys sorted, so field order does not matter. */
    fingerprint(body: unknown): string {
      return createHmac('sha256', secret).update(canonicalJson(body)).digest('base64url')
    },

    lookup,

    /**
     * Runs `work` unless the key already has an answer, and stores its answer, all in one
     * transaction: two concurrent requests with one key cannot both do the work.
     */
    once(
      scope: string,
      key: string,
      fingerprint: string,
      work: () => StoredAnswer,
    ): { replayed: boolean; answer: StoredAnswer } {
      return db.$client
        .transaction(() => {
          const stored = lookup(scope, key, fingerprint)
          if (stored !== null) return { replayed: true, answer: stored }
          const answer = work()
          save.run({ scope, key, fingerprint, ...answer, createdAt: now() })
          return { replayed: false, answer }
        })
        .immediate()
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
