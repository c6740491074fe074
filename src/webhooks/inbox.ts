import type { ListRequest } from '../db/page'
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

/** A verified delivery, as the route hands it to the inbox. */
export interface ReceivedEvent {
  eventId: string
  scheme: WebhookScheme
  type: string
  payload: string
  /** The signed body's SHA-256, for schemes whose replays are told apart by it (sha256=). */
  bodySha256: string | null
}

/** An event's outcome, written in the unit of work that handled it. */
export interface InboxOutcomes {
  finish(seq: number, status: 'processed' | 'ignored'): Promise<void>
  /** Marks a failure; `retryAt` null means no more attempts. */
  fail(seq: number, error: string, retryAt: number | null): Promise<void>
}

/**
 * The webhook inbox: verified deliveries, deduplicated by (scheme, event id) or by the signed
 * body's hash, and their outcome. Written for a database without a single writer: `record` is
 * an insert that does nothing on a duplicate (the unique index decides, not a read first), and
 * `claimDue` hands events to one worker at a time: on a shared database it takes a lease that
 * another instance's worker skips until it lapses, so an instance that dies while handling
 * loses nothing. (SQLite has one server and one worker per file: there a claim is a read.)
 */
export interface WebhookInbox {
  /** Commits a verified event; false when it was a duplicate. */
  record(event: ReceivedEvent): Promise<boolean>
  /** Up to `limit` pending or failed events due now, the earliest first, claimed for handling. */
  claimDue(limit: number): Promise<InboxEvent[]>
  /** Gives back claimed events that were not handled (the worker's slice ran out first). */
  release(seqs: readonly number[]): Promise<void>
  /** When the next event falls due (epoch ms), or null when none waits. */
  earliestDue(): Promise<number | null>
  /**
   * Schedules a failed event for another attempt now (once it has used up its retries too).
   * `missing` when no event has this id, `not-failed` when it is pending, processed or
   * ignored; otherwise the event as it stands, committed.
   */
  retry(eventId: string): Promise<EventView | 'missing' | 'not-failed'>
  /** A page of events, newest first; only those with `status` when it is given. */
  list(request: ListRequest, status?: EventStatus): Promise<{ data: EventView[]; total: number }>
  count(): Promise<number>
  /** Events waiting to be handled or retried. */
  waiting(): Promise<number>
  /**
   * Deletes up to `limit` events received before `cutoff` (ISO 8601) that wait for nothing
   * more (handled, ignored, or failed for good); resolves to how many went.
   */
  purgeReceivedBefore(cutoff: string, limit: number): Promise<number>
}

/** A webhook_events row as both databases' claims read it. */
export interface EventRow {
  seq: number
  event_id: string
  scheme: WebhookScheme
  type: string
  payload: string
  attempts: number
}

export function eventOfRow(row: EventRow): InboxEvent {
  return {
    seq: row.seq,
    eventId: row.event_id,
    scheme: row.scheme,
    type: row.type,
    payload: row.payload,
    attempts: row.attempts,
  }
}
