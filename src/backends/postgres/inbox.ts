import type { SQL } from 'bun'
import { directionOf, type ListRequest } from '../../db/page'
import {
  type EventRow,
  type EventStatus,
  type EventView,
  eventOfRow,
  type InboxEvent,
  type InboxOutcomes,
  type ReceivedEvent,
  type WebhookInbox,
} from '../../webhooks/inbox'
import { countOf, pageOf, type WithTotal } from './page'

/** The PostgreSQL inbox, and its outcome writes inside a unit's transaction. */
export interface PgWebhookInbox extends WebhookInbox {
  inUnit(tx: SQL): InboxOutcomes
}

/**
 * How long a claimed event is this instance's alone. Handlers take milliseconds; an instance
 * that dies holding a claim delays its events by at most this much, then another takes them.
 */
export const DEFAULT_LEASE_MS = 30_000

/**
 * The inbox in PostgreSQL, shared by every instance's worker. `claimDue` takes due events no
 * one holds (`FOR UPDATE SKIP LOCKED`, so two workers never wait on or take the same event)
 * and leases them; the outcome, written in the handler's transaction, ends the lease. An event
 * whose instance died mid-handling is due again once its lease lapses.
 */
export function createPgWebhookInbox(
  pool: SQL,
  now: () => Date,
  leaseMs = DEFAULT_LEASE_MS,
): PgWebhookInbox {
  return {
    inUnit: (tx) => ({
      async finish(seq, status) {
        await tx`
          UPDATE webhook_events SET status = ${status}, attempts = attempts + 1, error = NULL,
            processed_at = ${now().toISOString()}, next_attempt_at = NULL, lease_until = NULL
          WHERE seq = ${seq}`
      },
      async fail(seq, error, retryAt) {
        await tx`
          UPDATE webhook_events SET status = 'failed', attempts = attempts + 1,
            error = ${error.slice(0, 1000)}, next_attempt_at = ${retryAt}, lease_until = NULL
          WHERE seq = ${seq}`
      },
    }),

    async record(event: ReceivedEvent): Promise<boolean> {
      const at = now()
      // Either unique key makes it a duplicate: (scheme, event id), or the body's hash.
      const rows = await pool`
        INSERT INTO webhook_events
          (event_id, scheme, type, payload, status, attempts, received_at, next_attempt_at, body_sha256)
        VALUES (${event.eventId}, ${event.scheme}, ${event.type}, ${event.payload}, 'pending', 0,
                ${at.toISOString()}, ${at.getTime()}, ${event.bodySha256})
        ON CONFLICT DO NOTHING RETURNING 1`
      return rows.length === 1
    },

    async claimDue(limit: number): Promise<InboxEvent[]> {
      const at = now().getTime()
      const rows = await pool<(EventRow & { due: number })[]>`
        UPDATE webhook_events e SET lease_until = ${at + leaseMs}
        FROM (
          SELECT seq FROM webhook_events
          WHERE next_attempt_at <= ${at} AND (lease_until IS NULL OR lease_until <= ${at})
          ORDER BY next_attempt_at, seq LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE e.seq = due.seq
        RETURNING e.seq, e.event_id, e.scheme, e.type, e.payload, e.attempts,
                  e.next_attempt_at::float8 AS due`
      // Earliest due first, as the claim chose them (UPDATE … RETURNING keeps no order).
      rows.sort((a, b) => a.due - b.due || a.seq - b.seq)
      return rows.map(eventOfRow)
    },

    async release(seqs: readonly number[]): Promise<void> {
      if (seqs.length === 0) return
      await pool`UPDATE webhook_events SET lease_until = NULL WHERE seq = ANY(${seqs}::int[])`
    },

    async earliestDue(): Promise<number | null> {
      // A leased event falls due again when its lease lapses (its holder may have died).
      const [row] = await pool<{ at: number | null }[]>`
        SELECT min(greatest(next_attempt_at, coalesce(lease_until, 0)))::float8 AS at
        FROM webhook_events WHERE next_attempt_at IS NOT NULL`
      return row?.at ?? null
    },

    async retry(eventId: string) {
      return await pool.begin(async (tx) => {
        // An id may exist under several schemes: a failed one is the one to retry.
        const [found] = await tx<{ seq: number; status: EventStatus }[]>`
          SELECT seq, status FROM webhook_events WHERE event_id = ${eventId}
          ORDER BY status = 'failed' DESC, seq DESC LIMIT 1 FOR UPDATE`
        if (found === undefined) return 'missing' as const
        if (found.status !== 'failed') return 'not-failed' as const
        const [updated] = await tx<EventView[]>`
          UPDATE webhook_events SET next_attempt_at = ${now().getTime()} WHERE seq = ${found.seq}
          RETURNING event_id AS id, scheme, type, status, attempts, error, received_at, processed_at`
        return updated as EventView
      })
    },

    async list(request: ListRequest, status?: EventStatus) {
      const filtered = status !== undefined
      const filter = filtered ? [status] : []
      return pageOf(
        await pool.unsafe<WithTotal<EventView>[]>(
          `SELECT event_id AS id, scheme, type, status, attempts, error, received_at, processed_at,
                  (count(*) OVER ())::int AS total
           FROM webhook_events ${filtered ? 'WHERE status = $3' : ''}
           ORDER BY seq ${directionOf(request, 'newest')} LIMIT $1 OFFSET $2`,
          [request.limit, request.offset, ...filter],
        ),
        () =>
          pool.unsafe(
            `SELECT count(*)::int AS n FROM webhook_events ${filtered ? 'WHERE status = $1' : ''}`,
            filter,
          ),
      )
    },

    async purgeReceivedBefore(cutoff, limit) {
      const rows = await pool`
        DELETE FROM webhook_events WHERE seq IN (
          SELECT seq FROM webhook_events
          WHERE received_at < ${cutoff} AND next_attempt_at IS NULL
          LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        RETURNING 1`
      return rows.length
    },

    count: () => countOf(pool`SELECT count(*)::int AS n FROM webhook_events`),
    waiting: () =>
      countOf(
        pool`SELECT count(*)::int AS n FROM webhook_events WHERE next_attempt_at IS NOT NULL`,
      ),
  }
}
