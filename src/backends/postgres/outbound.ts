import type { SQL } from 'bun'
import { directionOf } from '../../db/page'
import {
  type DeliveryRow,
  type HeadRow,
  type NewDelivery,
  outgoingOf,
} from '../../outbound/deliveries'
import {
  checkEndpointGuard,
  type EndpointChanges,
  type EndpointRecord,
} from '../../outbound/endpoints'
import type { ActiveEndpoint, OutboundRows, OutboundWriteRows } from '../../outbound/store'

const ENDPOINT_COLUMNS = `id, url, description, events, status, disabled_reason, secret,
  previous_secret, previous_secret_expires_at, starts_after, version, created_at, updated_at`

const DELIVERY_COLUMNS = `id::float8 AS id, endpoint_id, event_id, type, status, attempts,
  next_attempt_at::float8 AS next_attempt_at, last_attempt_at::float8 AS last_attempt_at,
  delivered_at::float8 AS delivered_at, response_status, response_body, last_error, duration_ms,
  created_at, payload`

type EndpointRow = Omit<EndpointRecord, 'events'> & { events: string }

const recordOf = (row: EndpointRow): EndpointRecord => ({
  ...row,
  events: JSON.parse(row.events) as string[],
})

/**
 * The outbound writes on PostgreSQL over `q`: the pool or a unit of work's transaction. An
 * update locks the endpoint (FOR UPDATE) before it checks the guard.
 */
function createPgOutboundWriteRows(
  q: SQL,
  inTransaction: <T>(work: (tx: SQL) => Promise<T>) => Promise<T>,
): OutboundWriteRows {
  const locked = async (tx: SQL, id: number) => {
    const [row] = await tx.unsafe<EndpointRow[]>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1::int8 FOR UPDATE`,
      [id],
    )
    return row === undefined ? null : recordOf(row)
  }
  return {
    async insert(endpoint, at) {
      const [row] = await q.unsafe<EndpointRow[]>(
        `INSERT INTO webhook_endpoints (url, description, events, secret, starts_after,
           created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
         RETURNING ${ENDPOINT_COLUMNS}`,
        [
          endpoint.url,
          endpoint.description,
          JSON.stringify(endpoint.events),
          endpoint.secret,
          endpoint.starts_after,
          at,
        ],
      )
      return recordOf(row as EndpointRow)
    },

    update(id, changes, guard, at) {
      return inTransaction(async (tx) => {
        const before = checkEndpointGuard(await locked(tx, id), guard)
        const change: EndpointChanges = typeof changes === 'function' ? changes(before) : changes
        const next = { ...before, ...change }
        const [row] = await tx.unsafe<EndpointRow[]>(
          `UPDATE webhook_endpoints SET url = $1, description = $2, events = $3, status = $4,
             disabled_reason = $5, secret = $6, previous_secret = $7,
             previous_secret_expires_at = $8, starts_after = $9, version = version + 1,
             updated_at = $10
           WHERE id = $11::int8 RETURNING ${ENDPOINT_COLUMNS}`,
          [
            next.url,
            next.description,
            JSON.stringify(next.events),
            next.status,
            next.disabled_reason,
            next.secret,
            next.previous_secret,
            next.previous_secret_expires_at,
            next.starts_after,
            at,
            id,
          ],
        )
        return { before, after: recordOf(row as EndpointRow) }
      })
    },

    remove(id, guard) {
      return inTransaction(async (tx) => {
        const removed = checkEndpointGuard(await locked(tx, id), guard)
        await tx`DELETE FROM webhook_endpoints WHERE id = ${id}::int8`
        return removed
      })
    },

    async countEndpoints() {
      const [row] = await q<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints`
      return row?.n ?? 0
    },

    async delivered(id, outcome) {
      await q`
        UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1,
          next_attempt_at = NULL, lease_until = NULL,
          first_attempt_at = coalesce(first_attempt_at, ${outcome.at}),
          last_attempt_at = ${outcome.at}, delivered_at = ${outcome.at + (outcome.ms ?? 0)},
          response_status = ${outcome.status}, response_body = ${outcome.body},
          last_error = NULL, duration_ms = ${outcome.ms}
        WHERE id = ${id}::int8`
    },

    async failed(id, outcome, retryAt, firstAttemptAt) {
      await q`
        UPDATE webhook_deliveries SET
          status = ${retryAt === null ? 'failed' : 'pending'}, attempts = attempts + 1,
          next_attempt_at = ${retryAt}, lease_until = NULL, first_attempt_at = ${firstAttemptAt},
          last_attempt_at = ${outcome.at}, response_status = ${outcome.status},
          response_body = ${outcome.body}, last_error = ${outcome.error},
          duration_ms = ${outcome.ms}
        WHERE id = ${id}::int8`
    },

    async retry(endpointId, id, now) {
      const [row] = await q.unsafe<DeliveryRow[]>(
        `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1,
           lease_until = NULL, first_attempt_at = NULL
         WHERE id = $2::int8 AND endpoint_id = $3::int8 RETURNING ${DELIVERY_COLUMNS}`,
        [now, id, endpointId],
      )
      return row ?? null
    },
  }
}

/** The oldest pending delivery of each enabled endpoint (the head of its queue). */
const HEADS = `
  SELECT d.id, d.next_attempt_at, d.lease_until, e.id AS endpoint_id
  FROM webhook_endpoints e
  CROSS JOIN LATERAL (
    SELECT id, next_attempt_at, lease_until FROM webhook_deliveries
    WHERE endpoint_id = e.id AND status = 'pending' ORDER BY id LIMIT 1) d
  WHERE e.status = 'enabled'`

/**
 * Outbound webhooks in PostgreSQL, shared by every instance: the dispatcher's place moves by
 * compare-and-set (one instance's batch wins; the other reads on from it), senders lease an
 * endpoint's oldest pending delivery (the lease re-checked in the UPDATE, so two instances
 * never hold one at once), and a delivery whose instance died is taken up when its lease lapses.
 */
export function createPgOutboundRows(pool: SQL): OutboundRows & {
  inUnit(tx: SQL): OutboundWriteRows
} {
  return {
    ...createPgOutboundWriteRows(pool, (work) => pool.begin(work)),
    inUnit: (tx) => createPgOutboundWriteRows(tx, (work) => work(tx)),

    async getEndpoint(id) {
      const [row] = await pool.unsafe<EndpointRow[]>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1::int8`,
        [id],
      )
      return row === undefined ? null : recordOf(row)
    },

    async pageEndpoints(request) {
      return await pool.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        const rows = await tx.unsafe<EndpointRow[]>(
          `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
           ORDER BY id ${directionOf(request, 'oldest')} LIMIT $1 OFFSET $2`,
          [request.limit, request.offset],
        )
        const [count] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints`
        return { data: rows.map(recordOf), total: count?.n ?? 0 }
      })
    },

    async activeEndpoints() {
      const rows = await pool<{ id: number; events: string; starts_after: string }[]>`
        SELECT id, events, starts_after FROM webhook_endpoints WHERE status = 'enabled'
        ORDER BY id`
      return rows.map(
        (row): ActiveEndpoint => ({
          id: row.id,
          events: JSON.parse(row.events) as string[],
          starts_after: row.starts_after,
        }),
      )
    },

    async dispatchedUpTo() {
      const [row] = await pool<{ position: string }[]>`
        SELECT position FROM webhook_dispatch WHERE id = 1`
      return row?.position ?? null
    },

    dispatch(from, to, deliveries, at) {
      const now = Date.parse(at)
      return pool.begin(async (tx) => {
        const moved =
          from === null
            ? await tx`INSERT INTO webhook_dispatch (id, position) VALUES (1, ${to})
                       ON CONFLICT DO NOTHING`
            : await tx`UPDATE webhook_dispatch SET position = ${to}
                       WHERE id = 1 AND position = ${from}`
        if (moved.count === 0) return false
        for (const batch of chunks(deliveries, 500)) await queue(tx, batch, now, at)
        return true
      })
    },

    async claimHeads(now, leaseUntil, limit, excluding) {
      const rows = await pool.unsafe<(HeadRow & { due: number })[]>(
        `WITH due AS (
           SELECT id FROM (${HEADS}) heads
           WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
             AND NOT (endpoint_id = ANY($3::int[]))
           ORDER BY next_attempt_at, id LIMIT $4)
         UPDATE webhook_deliveries d SET lease_until = $2
         FROM due, webhook_endpoints e
         WHERE d.id = due.id AND e.id = d.endpoint_id AND d.status = 'pending'
           AND (d.lease_until IS NULL OR d.lease_until <= $1)
         RETURNING d.id::float8 AS id, d.endpoint_id, e.url, d.event_id, d.payload, d.attempts,
           d.first_attempt_at::float8 AS first_attempt_at, e.secret, e.previous_secret,
           e.previous_secret_expires_at, d.next_attempt_at::float8 AS due`,
        [now, leaseUntil, [...excluding], limit],
      )
      return rows.sort((a, b) => a.due - b.due || a.id - b.id).map(outgoingOf)
    },

    async release(ids) {
      if (ids.length === 0) return
      await pool`UPDATE webhook_deliveries SET lease_until = NULL
                 WHERE id = ANY(${[...ids]}::int8[])`
    },

    async earliestDue() {
      const [row] = await pool.unsafe<{ at: number | null }[]>(
        `SELECT min(greatest(next_attempt_at, coalesce(lease_until, 0)))::float8 AS at
         FROM (${HEADS}) heads`,
      )
      return row?.at ?? null
    },

    async pageDeliveries(endpointId, request) {
      const values: (number | string)[] = [endpointId, request.limit + 1]
      let where = 'endpoint_id = $1::int8'
      if (request.before !== null) {
        values.push(request.before)
        where += ` AND id < $${values.length}::int8`
      }
      if (request.status !== undefined) {
        values.push(request.status)
        where += ` AND status = $${values.length}`
      }
      return pool.unsafe<DeliveryRow[]>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${where}
         ORDER BY webhook_deliveries.id DESC LIMIT $2`,
        values,
      )
    },

    async getDelivery(endpointId, id) {
      const [row] = await pool.unsafe<DeliveryRow[]>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
         WHERE id = $1::int8 AND endpoint_id = $2::int8`,
        [id, endpointId],
      )
      return row ?? null
    },

    async purgeBefore(cutoff, limit) {
      const result = await pool`
        DELETE FROM webhook_deliveries WHERE id IN (
          SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ${cutoff}
          ORDER BY id LIMIT ${limit})`
      return result.count
    },
  }
}

/** Queues a batch in one statement; an endpoint deleted meanwhile gets none, a repeat is skipped. */
async function queue(tx: SQL, batch: readonly NewDelivery[], now: number, at: string) {
  await tx.unsafe(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, type, payload, status,
       next_attempt_at, created_at)
     SELECT q.endpoint_id, q.event_id, q.type, q.payload, 'pending', $5, $6
     FROM unnest($1::int[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
       AS q(endpoint_id, event_id, type, payload, n)
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = q.endpoint_id)
     ORDER BY q.n
     ON CONFLICT DO NOTHING`,
    [
      batch.map((delivery) => delivery.endpointId),
      batch.map((delivery) => delivery.eventId),
      batch.map((delivery) => delivery.type),
      batch.map((delivery) => delivery.payload),
      now,
      at,
    ],
  )
}

function* chunks<T>(items: readonly T[], size: number): Generator<readonly T[]> {
  for (let start = 0; start < items.length; start += size) yield items.slice(start, start + size)
}
