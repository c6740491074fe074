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

/**
 * An Idempotency-Key inside a unit of work. Written for a database without a single writer:
 * `claim` is an insert-claim (the key's row is inserted, or the one already there is read,
 * and a concurrent claim of the same key waits for this unit to commit or roll back), and
 * `complete` stores the answer in the same unit, so the work and its answer commit together.
 */
export interface IdempotencyClaims {
  /**
   * Claims the key for this unit's work: null when it is this unit's to do, or the live answer
   * stored for it. CONFLICT when the key was used with another request body.
   */
  claim(scope: string, key: string, fingerprint: string): Promise<StoredAnswer | null>
  /** Stores the answer to a claimed key. */
  complete(scope: string, key: string, fingerprint: string, answer: StoredAnswer): Promise<void>
}

/**
 * Idempotency-Key bookkeeping. A key is scoped (to the caller and the route), remembered with
 * a fingerprint of the request body and the first successful answer, and replayed for 24 h.
 */
export interface IdempotencyStore {
  /** An HMAC of the body with keys sorted, so field order does not matter. */
  fingerprint(body: unknown): string
  /** The committed answer for this key if it is still live; CONFLICT if it was for another body. */
  lookup(scope: string, key: string, fingerprint: string): Promise<StoredAnswer | null>
  /** Deletes answers older than 24 h (safe to run on every instance at once). */
  purgeExpired(): Promise<void>
}

/**
 * Runs `work` unless the key already has an answer, and stores its answer, in the caller's
 * unit of work: two concurrent requests with one key cannot both do the work.
 */
export async function once(
  claims: IdempotencyClaims,
  claim: { scope: string; key: string; fingerprint: string },
  work: () => Promise<StoredAnswer>,
): Promise<{ replayed: boolean; answer: StoredAnswer }> {
  const { scope, key, fingerprint } = claim
  const stored = await claims.claim(scope, key, fingerprint)
  if (stored !== null) return { replayed: true, answer: stored }
  const answer = await work()
  await claims.complete(scope, key, fingerprint, answer)
  return { replayed: false, answer }
}

/** An Idempotency-Key as given (null when absent); VALIDATION_ERROR when malformed. */
export function checkedIdempotencyKey(key: string | null): string | null {
  if (key === null) return null
  if (!KEY_FORMAT.test(key)) {
    throw validationFailed([
      fieldDetail('Idempotency-Key', 'must be 1–255 visible ASCII characters', key),
    ])
  }
  return key
}

/** JSON with object keys sorted, for fingerprints that ignore field order. */
export function canonicalJson(value: unknown): string {
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

/**
 * The stored answer for a key, from its row (null when there is none); CONFLICT when the key
 * was used with another request body. Shared by both databases' stores.
 */
export function answerOf(
  row: (StoredAnswer & { fingerprint: string }) | null | undefined,
  key: string,
  fingerprint: string,
): StoredAnswer | null {
  if (row === null || row === undefined) return null
  if (row.fingerprint !== fingerprint) {
    throw conflict('This Idempotency-Key was already used with a different request body', [
      fieldDetail('Idempotency-Key', 'was used with a different request body', key),
    ])
  }
  return { status: row.status, body: row.body, location: row.location }
}
