import type { AuditEvent } from '../audit/events'
import type { SecretsOf } from './endpoints'

/**
 * A delivery is one event for one endpoint: queued when the event's place in the feed is final
 * (so in feed order, one per endpoint and event), sent by the sender one at a time per endpoint,
 * oldest first, until the receiver answers 2xx (`delivered`) or the retry window runs out
 * (`failed`, and the endpoint is disabled).
 */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

/** A delivery as the delivery log shows it. */
export interface DeliveryView {
  id: number
  endpoint_id: number
  /** The event's id, sent as `webhook-id`: the same on every attempt, for the receiver to dedupe. */
  event_id: string
  /** The event's action, the payload's `type`. */
  type: string
  status: DeliveryStatus
  attempts: number
  /** When the next attempt is due (pending only). */
  next_attempt_at: string | null
  last_attempt_at: string | null
  delivered_at: string | null
  /** The receiver's HTTP status at the last attempt; null when it gave none. */
  response_status: number | null
  /** The start of the receiver's answer at the last attempt (at most 1 KiB). */
  response_body: string | null
  /** Why the last attempt failed: a status, a refused address, a timeout… */
  last_error: string | null
  duration_ms: number | null
  created_at: string
  /** What is sent: `{ type, timestamp, data }`, data being the audit event. */
  payload: DeliveryPayload
}

/** The body of a delivery, in the Standard Webhooks shape. */
export interface DeliveryPayload {
  type: string
  timestamp: string
  data: AuditEvent
}

export function payloadOf(event: AuditEvent): DeliveryPayload {
  return { type: event.action, timestamp: event.at, data: event }
}

/** A delivery as the dispatcher queues it. */
export interface NewDelivery {
  endpointId: number
  eventId: string
  type: string
  /** The payload as JSON text: the bytes signed and sent on every attempt. */
  payload: string
}

/** A delivery claimed for an attempt, with where it goes and what signs it (at claim time). */
export interface OutgoingDelivery extends SecretsOf {
  id: number
  endpointId: number
  url: string
  eventId: string
  payload: string
  attempts: number
  /** When its first attempt started (epoch ms); null before one: the retry window runs from it. */
  firstAttemptAt: number | null
}

/** How an attempt went. */
export interface AttemptOutcome {
  /** When it started (epoch ms). */
  at: number
  /** The receiver's status; null when there was no answer. */
  status: number | null
  body: string | null
  /** Why it failed; null when the receiver answered 2xx. */
  error: string | null
  ms: number | null
}

/** A delivery as both databases store it. */
export interface DeliveryRow {
  id: number
  endpoint_id: number
  event_id: string
  type: string
  status: DeliveryStatus
  attempts: number
  next_attempt_at: number | null
  last_attempt_at: number | null
  delivered_at: number | null
  response_status: number | null
  response_body: string | null
  last_error: string | null
  duration_ms: number | null
  created_at: string
  payload: string
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function deliveryOfRow(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    last_attempt_at: iso(row.last_attempt_at),
    delivered_at: iso(row.delivered_at),
    response_status: row.response_status,
    response_body: row.response_body,
    last_error: row.last_error,
    duration_ms: row.duration_ms,
    created_at: row.created_at,
    payload: JSON.parse(row.payload) as DeliveryPayload,
  }
}

/** A page of a delivery log: newest first, older than the delivery `before`, if given. */
export interface DeliveryPageRequest {
  limit: number
  before: number | null
  status?: DeliveryStatus
}

/** An endpoint's head delivery with its endpoint's URL and secrets, as both databases claim it. */
export interface HeadRow {
  id: number
  endpoint_id: number
  url: string
  event_id: string
  payload: string
  attempts: number
  first_attempt_at: number | null
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: string | null
}

export function outgoingOf(row: HeadRow): OutgoingDelivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    url: row.url,
    eventId: row.event_id,
    payload: row.payload,
    attempts: row.attempts,
    firstAttemptAt: row.first_attempt_at,
    secret: row.secret,
    previous_secret: row.previous_secret,
    previous_secret_expires_at: row.previous_secret_expires_at,
  }
}
