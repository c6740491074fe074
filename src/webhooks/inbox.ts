import type { Store } from '../db/client'
import type { PageRequest } from '../db/page'
import type { WebhookScheme } from './signature'

export const EVENT_STATUSES = ['pending', 'processed', 'ignored', 'failed'] as const
export type EventStatus = (typeof EVENT_STATUSES)[number]

export interface InboxEvent {
  seq: number
  eventId: string
  scheme: WebhookScheme
  type: string
  payload: string
  attempts: number
}

/** One event as GET /webhooks/events shows it. */
export interface EventView {
  id: string
  scheme: WebhookScheme
  type: string
  status: EventStatus
  attempts: number
  error: string | null
  received_at: string
  processed_at: string | null
}

interface EventRow {
  seq: number
  event_id: string
  scheme: WebhookScheme
  type: string
  payload: string
  attempts: number
}

export type WebhookInbox = ReturnType<typeof createWebhookInbox>

/** The columns of an EventView, as GET /webhooks/events shows an event. */
const EVENT_VIEW =
  'event_id AS id, scheme, type, status, attempts, error, received_at, processed_at'

/**
 * The inbox table: verified deliveries, deduplicated by (scheme, event id), and their outcome.
 * `dueBatch`, `finish` and `fail` are for the worker's writes (they use the writer); the views
 * read committed data.
 */
export function createWebhookInbox(store: Store, now: () => Date) {
  const sqlite = store.db.$client
  const { reader, writes } = store
  const insert = sqlite.query(
    // Either unique key makes it a duplicate: (scheme, event id), or the body's hash (sha256=).
    `INSERT INTO webhook_events (event_id, scheme, type, payload, status, attempts, received_at, next_attempt_at, body_sha256)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT DO NOTHING`,
  )
  const dueBatch = sqlite.query<EventRow, [number, number]>(
    `SELECT seq, event_id, scheme, type, payload, attempts FROM webhook_events
     WHERE next_attempt_at <= ? ORDER BY next_attempt_at, seq LIMIT ?`,
  )
  const earliest = reader.query<{ at: number | null }, []>(
    'SELECT min(next_attempt_at) AS at FROM webhook_events',
  )
  const finish = sqlite.query(
    `UPDATE webhook_events SET status = ?, attempts = attempts + 1, error = NULL, processed_at = ?,
     next_attempt_at = NULL WHERE seq = ?`,
  )
  const fail = sqlite.query(
    `UPDATE webhook_events SET status = 'failed', attempts = attempts + 1, error = ?,
     next_attempt_at = ? WHERE seq = ?`,
  )
  const page = reader.query<EventView, [number, number]>(
    `SELECT ${EVENT_VIEW} FROM webhook_events ORDER BY seq DESC LIMIT ? OFFSET ?`,
  )
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM webhook_events')
  const pageWithStatus = reader.query<EventView, [EventStatus, number, number]>(
    `SELECT ${EVENT_VIEW} FROM webhook_events WHERE status = ? ORDER BY seq DESC LIMIT ? OFFSET ?`,
  )
  const totalWithStatus = reader.query<{ n: number }, [EventStatus]>(
    'SELECT count(*) AS n FROM webhook_events WHERE status = ?',
  )
  // An id may exist under several schemes: a failed one is the one to retry.
  const byEventId = sqlite.query<{ seq: number; status: EventStatus }, [string]>(
    `SELECT seq, status FROM webhook_events WHERE event_id = ?
     ORDER BY status = 'failed' DESC, seq DESC LIMIT 1`,
  )
  const scheduleNow = sqlite.query('UPDATE webhook_events SET next_attempt_at = ? WHERE seq = ?')
  const viewBySeq = sqlite.query<EventView, [number]>(
    `SELECT ${EVENT_VIEW} FROM webhook_events WHERE seq = ?`,
  )
  // next_attempt_at is set exactly while an event waits for a first or a further attempt.
  const waiting = reader.query<{ n: number }, []>(
    'SELECT count(*) AS n FROM webhook_events WHERE next_attempt_at IS NOT NULL',
  )
  const readPage = reader.transaction((request: PageRequest, status: EventStatus | undefined) =>
    status === undefined
      ? { data: page.all(request.limit, request.offset), total: total.get()?.n ?? 0 }
      : {
          data: pageWithStatus.all(status, request.limit, request.offset),
          total: totalWithStatus.get(status)?.n ?? 0,
        },
  )

  return {
    /**
     * Commits a verified event; false when this (scheme, id) was seen before, or (sha256=
     * scheme) the same signed body was.
     */
    async record(event: {
      eventId: string
      scheme: WebhookScheme
      type: string
      payload: string
      bodySha256: string | null
    }): Promise<boolean> {
      const at = now()
      const { changes } = await writes.run(() =>
        insert.run(
          event.eventId,
          event.scheme,
          event.type,
          event.payload,
          at.toISOString(),
          at.getTime(),
          event.bodySha256,
        ),
      )
      return changes > 0
    },

    /** The pending or failed events due now, the earliest first, at most `limit`. */
    dueBatch(limit: number): InboxEvent[] {
      return dueBatch.all(now().getTime(), limit).map((row) => ({
        seq: row.seq,
        eventId: row.event_id,
        scheme: row.scheme,
        type: row.type,
        payload: row.payload,
        attempts: row.attempts,
      }))
    },

    /** When the next event falls due (epoch ms), or null when none waits. */
    earliestDue(): number | null {
      return earliest.get()?.at ?? null
    },

    finish(seq: number, status: 'processed' | 'ignored'): void {
      finish.run(status, now().toISOString(), seq)
    },

    /** Marks a failure; `retryAt` null means no more attempts. */
    fail(seq: number, error: string, retryAt: number | null): void {
      fail.run(error.slice(0, 1000), retryAt, seq)
    },

    /**
     * Schedules a failed event for another attempt now (once it has used up its retries too).
     * `missing` when no event has this id, `not-failed` when it is pending, processed or
     * ignored; otherwise the event as it stands, committed.
     */
    async retry(eventId: string): Promise<EventView | 'missing' | 'not-failed'> {
      return await writes.run(() => {
        const found = byEventId.get(eventId)
        if (found === null) return 'missing' as const
        if (found.status !== 'failed') return 'not-failed' as const
        scheduleNow.run(now().getTime(), found.seq)
        return viewBySeq.get(found.seq) as EventView
      })
    },

    /** A page of events, newest first; only those with `status` when it is given. */
    list(request: PageRequest, status?: EventStatus): { data: EventView[]; total: number } {
      return readPage(request, status)
    },

    count(): number {
      return total.get()?.n ?? 0
    },

    /** Events waiting to be handled or retried. */
    waiting(): number {
      return waiting.get()?.n ?? 0
    },
  }
}
