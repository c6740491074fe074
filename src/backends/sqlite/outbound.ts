import type { Database } from 'bun:sqlite'
import { bothWays, directionOf, type ListRequest } from '../../db/page'
import {
  type AttemptOutcome,
  type DeliveryPageRequest,
  type DeliveryRow,
  type HeadRow,
  type NewDelivery,
  outgoingOf,
} from '../../outbound/deliveries'
import {
  checkEndpointGuard,
  type EndpointChanges,
  type EndpointGuard,
  type EndpointRecord,
  type EndpointStatus,
} from '../../outbound/endpoints'
import type { ActiveEndpoint, OutboundRows, OutboundWriteRows } from '../../outbound/store'
import type { Store } from './connection'
import { settle } from './settle'

const ENDPOINT_COLUMNS = `id, url, description, events, status, disabled_reason, secret,
  previous_secret, previous_secret_expires_at, starts_after, version, created_at, updated_at`

const DELIVERY_COLUMNS = `id, endpoint_id, event_id, type, status, attempts, next_attempt_at,
  last_attempt_at, delivered_at, response_status, response_body, last_error, duration_ms,
  created_at, payload`

type EndpointRow = Omit<EndpointRecord, 'events'> & { events: string }

const recordOf = (row: EndpointRow): EndpointRecord => ({
  ...row,
  events: JSON.parse(row.events) as string[],
})

/** The oldest pending delivery of each enabled endpoint (the head of its queue). */
const HEADS = `
  SELECT d.id, d.endpoint_id, e.url, d.event_id, d.payload, d.attempts, d.first_attempt_at,
    d.next_attempt_at, d.lease_until, e.secret, e.previous_secret, e.previous_secret_expires_at
  FROM webhook_endpoints e
  JOIN webhook_deliveries d ON d.id = (
    SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = e.id AND status = 'pending')
  WHERE e.status = 'enabled'`

/**
 * Outbound webhooks in SQLite: one process per file, whose sender knows what it has under way
 * (and leaves those endpoints out of a claim), so a claim is a read and needs no lease: a
 * restart finds nothing held. `lease_until` stays empty here (PostgreSQL's senders use it).
 */
export function createSqliteOutboundRows(store: Store): OutboundRows & {
  readonly inUnit: OutboundWriteRows
} {
  const writer = store.db.$client
  const { reader, writes } = store
  const insertEndpoint = writer.query<EndpointRow, (string | null)[]>(
    `INSERT INTO webhook_endpoints (url, description, events, secret, starts_after, created_at,
       updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${ENDPOINT_COLUMNS}`,
  )
  const endpointBy = (db: Database) =>
    db.query<EndpointRow, [number]>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?`,
    )
  const readEndpoint = endpointBy(reader)
  const currentEndpoint = endpointBy(writer)
  const updateEndpoint = writer.query<EndpointRow, Record<string, string | number | null>>(
    `UPDATE webhook_endpoints SET url = $url, description = $description, events = $events,
       status = $status, disabled_reason = $disabled_reason, secret = $secret,
       previous_secret = $previous_secret, previous_secret_expires_at = $previous_secret_expires_at,
       starts_after = $starts_after, version = version + 1, updated_at = $at
     WHERE id = $id RETURNING ${ENDPOINT_COLUMNS}`,
  )
  const removeEndpoint = writer.query('DELETE FROM webhook_endpoints WHERE id = ?')
  const countEndpoints = writer.query<{ n: number }, []>(
    'SELECT count(*) AS n FROM webhook_endpoints',
  )
  const endpointPage = bothWays((direction) =>
    reader.query<EndpointRow, [number, number]>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY id ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const endpointTotal = reader.query<{ n: number }, []>(
    'SELECT count(*) AS n FROM webhook_endpoints',
  )
  const active = reader.query<{ id: number; events: string; starts_after: string }, []>(
    "SELECT id, events, starts_after FROM webhook_endpoints WHERE status = 'enabled' ORDER BY id",
  )
  const reached = reader.query<{ position: string }, []>(
    'SELECT position FROM webhook_dispatch WHERE id = 1',
  )
  const firstDispatch = writer.query(
    'INSERT INTO webhook_dispatch (id, position) VALUES (1, ?) ON CONFLICT DO NOTHING',
  )
  const moveDispatch = writer.query(
    'UPDATE webhook_dispatch SET position = ? WHERE id = 1 AND position = ?',
  )
  const queue = writer.query(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, type, payload, status, next_attempt_at,
       created_at)
     SELECT ?1, ?2, ?3, ?4, 'pending', ?5, ?6 WHERE EXISTS (
       SELECT 1 FROM webhook_endpoints WHERE id = ?1)
     ON CONFLICT DO NOTHING`,
  )
  const heads = reader.query<HeadRow & { next_attempt_at: number }, []>(HEADS)
  const earliest = reader.query<{ at: number | null }, []>(
    `SELECT min(next_attempt_at) AS at FROM (${HEADS})`,
  )
  const delivered = writer.query(
    `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1,
       next_attempt_at = NULL, lease_until = NULL,
       first_attempt_at = coalesce(first_attempt_at, $at), last_attempt_at = $at,
       delivered_at = $done, response_status = $status, response_body = $body,
       last_error = NULL, duration_ms = $ms
     WHERE id = $id`,
  )
  const failed = writer.query(
    `UPDATE webhook_deliveries SET status = CASE WHEN $retry IS NULL THEN 'failed' ELSE 'pending' END,
       attempts = attempts + 1, next_attempt_at = $retry, lease_until = NULL,
       first_attempt_at = $first, last_attempt_at = $at, response_status = $status,
       response_body = $body, last_error = $error, duration_ms = $ms
     WHERE id = $id`,
  )
  const retry = writer.query<DeliveryRow, [number, number, number]>(
    `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?1,
       lease_until = NULL, first_attempt_at = NULL
     WHERE id = ?2 AND endpoint_id = ?3 RETURNING ${DELIVERY_COLUMNS}`,
  )
  const deliveryBy = reader.query<DeliveryRow, [number, number]>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?`,
  )
  const purge = writer.query(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?
       ORDER BY id LIMIT ?)`,
  )
  // Nested in a group transaction this is a savepoint; alone (a test) it is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()

  const inWrite = {
    insert: (
      endpoint: { url: string; description: string | null; events: string[] } & {
        secret: string
        starts_after: string
      },
      at: string,
    ): EndpointRecord =>
      recordOf(
        insertEndpoint.get(
          endpoint.url,
          endpoint.description,
          JSON.stringify(endpoint.events),
          endpoint.secret,
          endpoint.starts_after,
          at,
          at,
        ) as EndpointRow,
      ),
    update: (
      id: number,
      changes: EndpointChanges | ((current: EndpointRecord) => EndpointChanges),
      guard: EndpointGuard,
      at: string,
    ) =>
      transaction(() => {
        const current = currentEndpoint.get(id)
        const before = checkEndpointGuard(current === null ? null : recordOf(current), guard)
        const change = typeof changes === 'function' ? changes(before) : changes
        const next = { ...before, ...change }
        const row = updateEndpoint.get({
          $url: next.url,
          $description: next.description,
          $events: JSON.stringify(next.events),
          $status: next.status as EndpointStatus,
          $disabled_reason: next.disabled_reason,
          $secret: next.secret,
          $previous_secret: next.previous_secret,
          $previous_secret_expires_at: next.previous_secret_expires_at,
          $starts_after: next.starts_after,
          $at: at,
          $id: id,
        }) as EndpointRow
        return { before, after: recordOf(row) }
      }),
    remove: (id: number, guard: EndpointGuard): EndpointRecord =>
      transaction(() => {
        const current = currentEndpoint.get(id)
        const removed = checkEndpointGuard(current === null ? null : recordOf(current), guard)
        removeEndpoint.run(id)
        return removed
      }),
    countEndpoints: () => countEndpoints.get()?.n ?? 0,
    delivered: (id: number, outcome: AttemptOutcome) => {
      delivered.run({
        $at: outcome.at,
        $done: outcome.at + (outcome.ms ?? 0),
        $status: outcome.status,
        $body: outcome.body,
        $ms: outcome.ms,
        $id: id,
      })
    },
    failed: (
      id: number,
      outcome: AttemptOutcome,
      retryAt: number | null,
      firstAttemptAt: number,
    ) => {
      failed.run({
        $retry: retryAt,
        $first: firstAttemptAt,
        $at: outcome.at,
        $status: outcome.status,
        $body: outcome.body,
        $error: outcome.error,
        $ms: outcome.ms,
        $id: id,
      })
    },
    retry: (endpointId: number, id: number, now: number) => retry.get(now, id, endpointId),
  }

  const dispatch = (
    from: string | null,
    to: string,
    deliveries: readonly NewDelivery[],
    at: string,
    now: number,
  ): boolean =>
    transaction(() => {
      const moved = from === null ? firstDispatch.run(to) : moveDispatch.run(to, from)
      if (moved.changes === 0) return false
      for (const delivery of deliveries) {
        queue.run(delivery.endpointId, delivery.eventId, delivery.type, delivery.payload, now, at)
      }
      return true
    })

  const claim = (now: number, limit: number, excluding: readonly number[]) =>
    heads
      .all()
      .filter((row) => row.next_attempt_at <= now && !excluding.includes(row.endpoint_id))
      .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id)
      .slice(0, limit)
      .map(outgoingOf)

  const unit: OutboundWriteRows = {
    insert: (endpoint, at) => settle(() => inWrite.insert(endpoint, at)),
    update: (id, changes, guard, at) => settle(() => inWrite.update(id, changes, guard, at)),
    remove: (id, guard) => settle(() => inWrite.remove(id, guard)),
    countEndpoints: () => settle(inWrite.countEndpoints),
    delivered: (id, outcome) => settle(() => inWrite.delivered(id, outcome)),
    failed: (id, outcome, retryAt, first) =>
      settle(() => inWrite.failed(id, outcome, retryAt, first)),
    retry: (endpointId, id, now) => settle(() => inWrite.retry(endpointId, id, now)),
  }

  return {
    inUnit: unit,
    insert: (endpoint, at) => writes.run(() => inWrite.insert(endpoint, at)),
    update: (id, changes, guard, at) => writes.run(() => inWrite.update(id, changes, guard, at)),
    remove: (id, guard) => writes.run(() => inWrite.remove(id, guard)),
    countEndpoints: () => settle(inWrite.countEndpoints),
    delivered: (id, outcome) => writes.run(() => inWrite.delivered(id, outcome)),
    failed: (id, outcome, retryAt, first) =>
      writes.run(() => inWrite.failed(id, outcome, retryAt, first)),
    retry: (endpointId, id, now) => writes.run(() => inWrite.retry(endpointId, id, now)),
    getEndpoint: (id) =>
      settle(() => {
        const row = readEndpoint.get(id)
        return row === null ? null : recordOf(row)
      }),
    pageEndpoints: (request: ListRequest) =>
      settle(
        store.snapshot(() => ({
          data: endpointPage[directionOf(request, 'oldest')]
            .all(request.limit, request.offset)
            .map(recordOf),
          total: endpointTotal.get()?.n ?? 0,
        })),
      ),
    activeEndpoints: () =>
      settle(() =>
        active.all().map(
          (row): ActiveEndpoint => ({
            id: row.id,
            events: JSON.parse(row.events) as string[],
            starts_after: row.starts_after,
          }),
        ),
      ),
    dispatchedUpTo: () => settle(() => reached.get()?.position ?? null),
    dispatch: (from, to, deliveries, at) =>
      writes.run(() => dispatch(from, to, deliveries, at, Date.parse(at))),
    claimHeads: (now, _leaseUntil, limit, excluding) => settle(() => claim(now, limit, excluding)),
    // Nothing is held between a claim and its outcome here (see above).
    release: () => Promise.resolve(),
    earliestDue: () => settle(() => earliest.get()?.at ?? null),
    pageDeliveries: (endpointId, request: DeliveryPageRequest) =>
      settle(() => {
        const conditions = ['endpoint_id = ?']
        const values: (number | string)[] = [endpointId]
        if (request.before !== null) {
          conditions.push('id < ?')
          values.push(request.before)
        }
        if (request.status !== undefined) {
          conditions.push('status = ?')
          values.push(request.status)
        }
        return reader
          .query<DeliveryRow, (number | string)[]>(
            `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${conditions.join(' AND ')}
             ORDER BY id DESC LIMIT ?`,
          )
          .all(...values, request.limit + 1)
      }),
    getDelivery: (endpointId, id) => settle(() => deliveryBy.get(id, endpointId)),
    purgeBefore: (cutoff, limit) => writes.run(() => purge.run(cutoff, limit).changes),
  }
}
