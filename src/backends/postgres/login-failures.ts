import { randomUUID } from 'node:crypto'
import type { SQL } from 'bun'
import {
  type KeyHistory,
  LOGIN_WINDOW_MS,
  type LoginFailureLog,
  MAX_FAILURES_PER_IP,
  type ReservationWindow,
} from '../../auth/limiter'
import { lookupText } from './text'

/** pg_advisory_xact_lock's first key for the limiter: 'logn' as a 32-bit number. */
const LIMITER_LOCK = 0x6c6f676e

/**
 * Failed sign-ins and checks in flight as rows in the shared database, so the limiters of every
 * instance together let through what one would: a reservation takes a transaction-scoped
 * advisory lock per key (in one order, so two never wait on each other), reads the keys' rows,
 * and inserts its own before the lock is released. 200 concurrent guesses spread over any number
 * of instances get at most 10 password checks for one address.
 */
export class PgLoginFailures implements LoginFailureLog {
  constructor(private readonly pool: SQL) {}

  async reserve(
    keys: readonly string[],
    window: ReservationWindow,
    decide: (history: KeyHistory[]) => number,
  ): Promise<{ reservation: string } | { waitMs: number }> {
    const subjects = keys.map(lookupText)
    return await this.pool.begin(async (tx) => {
      await tx`
        SELECT pg_advisory_xact_lock(${LIMITER_LOCK}, h)
        FROM (SELECT DISTINCT hashtext(s) AS h FROM unnest(${subjects}::text[]) s) locks
        ORDER BY h`
      const rows = await tx<{ subject: string; at: number; in_flight: boolean }[]>`
        SELECT subject, at, in_flight FROM (
          SELECT subject, at::float8 AS at, lease_until IS NOT NULL AS in_flight,
                 row_number() OVER (PARTITION BY subject, lease_until IS NULL ORDER BY at DESC) AS newest
          FROM login_failures
          WHERE subject = ANY(${subjects}::text[])
            AND ((lease_until IS NULL AND at > ${window.since}) OR lease_until > ${window.at})
        ) recent WHERE in_flight OR newest <= ${MAX_FAILURES_PER_IP} ORDER BY at`
      const waitMs = decide(
        subjects.map((subject) => {
          const mine = rows.filter((row) => row.subject === subject)
          return {
            failures: mine.filter((row) => !row.in_flight).map((row) => row.at),
            inFlight: mine.filter((row) => row.in_flight).length,
          }
        }),
      )
      if (waitMs > 0) return { waitMs }
      const reservation = randomUUID()
      await tx`
        INSERT INTO login_failures (subject, at, attempt, lease_until)
        SELECT s, ${window.at}, ${reservation}, ${window.leaseUntil}
        FROM unnest(${subjects}::text[]) s`
      return { reservation }
    })
  }

  async fail(reservation: string, at: number): Promise<void> {
    await this.pool.begin(async (tx) => {
      await tx`
        UPDATE login_failures SET at = ${at}, lease_until = NULL, attempt = NULL
        WHERE attempt = ${reservation}`
      // What has aged out, and checks whose instance died before their outcome.
      await tx`
        DELETE FROM login_failures
        WHERE (lease_until IS NULL AND at <= ${at - LOGIN_WINDOW_MS}) OR lease_until < ${at}`
    })
  }

  async succeed(reservation: string, clearKey: string): Promise<void> {
    await this.pool`
      DELETE FROM login_failures
      WHERE attempt = ${reservation} OR (subject = ${lookupText(clearKey)} AND lease_until IS NULL)`
  }

  async abandon(reservation: string): Promise<void> {
    await this.pool`DELETE FROM login_failures WHERE attempt = ${reservation}`
  }
}
