import { bothWays, directionOf, type ListRequest } from '../../db/page'
import {
  type EventRow,
  type EventStatus,
  type EventView,
  eventOfRow,
  type InboxOutcomes,
  type ReceivedEvent,
  type WebhookInbox,
} from '../../webhooks/inbox'
import type { Store } from './connection'
import { settle } from './settle'

/** The SQLite inbox, and its outcome writes as a unit of work sees them. */
export interface SqliteWebhookInbox extends WebhookInbox {
  readonly inUnit: InboxOutcomes
}

/** The columns of an EventView, as GET /webhooks/events shows an event. */
const EVENT_VIEW =
  'event_id AS id, scheme, type, status, attempts, error, received_at, processed_at'

/**
 * The inbox in SQLite. Every read sees committed data (the worker claims again only after its
 * slice has committed); the outcomes are written inside the worker's units.
 */
export function createSqliteWebhookInbox(store: Store, now: () => Date): SqliteWebhookInbox {
  const sqlite = store.db.$client
  const { reader, writes } = store
  const insert = sqlite.query(
    // Either unique key makes it a duplicate: (scheme, event id), or the body's hash (sha256=).
    `INSERT INTO webhook_events (event_id, scheme, type, payload, status, attempts, received_at, next_attempt_at, body_sha256)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT DO NOTHING`,
  )
  // Committed events only: a unit must never start on a delivery whose commit it would hold up.
  const dueBatch = reader.query<EventRow, [number, number]>(
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
  const page = bothWays((direction) =>
    reader.query<EventView, [number, number]>(
      `SELECT ${EVENT_VIEW} FROM webhook_events ORDER BY seq ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM webhook_events')
  const pageWithStatus = bothWays((direction) =>
    reader.query<EventView, [EventStatus, number, number]>(
      `SELECT ${EVENT_VIEW} FROM webhook_events WHERE status = ? ORDER BY seq ${direction} LIMIT ? OFFSET ?`,
    ),
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
  const purgeBefore = sqlite.query(
    `DELETE FROM webhook_events WHERE seq IN (
       SELECT seq FROM webhook_events WHERE received_at < ? AND next_attempt_at IS NULL LIMIT ?)`,
  )
  const readPage = store.snapshot((request: ListRequest, status: EventStatus | undefined) => {
    const direction = directionOf(request, 'newest')
    return status === undefined
      ? { data: page[direction].all(request.limit, request.offset), total: total.get()?.n ?? 0 }
      : {
          data: pageWithStatus[direction].all(status, request.limit, request.offset),
          total: totalWithStatus.get(status)?.n ?? 0,
        }
  })

  return {
    inUnit: {
      finish: (seq, status) =>
        settle(() => {
          finish.run(status, now().toISOString(), seq)
        }),
      fail: (seq, error, retryAt) =>
        settle(() => {
          fail.run(error.slice(0, 1000), retryAt, seq)
        }),
    },

    async record(event: ReceivedEvent): Promise<boolean> {
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

    claimDue: (limit) => settle(() => dueBatch.all(now().getTime(), limit).map(eventOfRow)),

    // A claim on SQLite is a read: there is nothing to give back.
    release: () => Promise.resolve(),

    earliestDue: () => settle(() => earliest.get()?.at ?? null),

    retry: (eventId) =>
      writes.run(() => {
        const found = byEventId.get(eventId)
        if (found === null) return 'missing' as const
        if (found.status !== 'failed') return 'not-failed' as const
        scheduleNow.run(now().getTime(), found.seq)
        return viewBySeq.get(found.seq) as EventView
      }),

    list: (request, status) => settle(() => readPage(request, status)),
    count: () => settle(() => total.get()?.n ?? 0),
    waiting: () => settle(() => waiting.get()?.n ?? 0),
    purgeReceivedBefore: (cutoff, limit) =>
      writes.run(() => purgeBefore.run(cutoff, limit).changes),
  }
}
