import { type AuditSource, type Changes, changedFields, SYSTEM } from '../audit/events'
import type { AuditWrites, FeedPosition } from '../audit/log'
import type { ListRequest } from '../db/page'
import type { Transaction } from '../db/unit'
import { checkedAddresses, type EgressPolicy, EgressRefused } from '../egress/client'
import { fieldDetail } from '../errors/details'
import { conflict, notFound, validationFailed } from '../errors/errors'
import {
  type AttemptOutcome,
  type DeliveryPageRequest,
  type DeliveryRow,
  type DeliveryView,
  deliveryOfRow,
  type NewDelivery,
  type OutgoingDelivery,
} from './deliveries'
import {
  checkEndpointInput,
  distinctEvents,
  type EndpointChanges,
  type EndpointGuard,
  type EndpointRecord,
  type EndpointStatus,
  MAX_ENDPOINTS,
  type NewEndpoint,
  newEndpointSecret,
} from './endpoints'

/** An endpoint as the dispatcher matches events against it. */
export interface ActiveEndpoint {
  id: number
  events: string[]
  starts_after: FeedPosition
}

/**
 * The outbound writes a unit of work holds, as a database does them. `update` and `remove` lock
 * the endpoint and check the guard (endpoints.ts checkEndpointGuard).
 */
export interface OutboundWriteRows {
  insert(
    endpoint: NewEndpoint & { secret: string; starts_after: FeedPosition },
    at: string,
  ): Promise<EndpointRecord>
  /** `changes`, or what to change given the endpoint as the lock found it. */
  update(
    id: number,
    changes: EndpointChanges | ((current: EndpointRecord) => EndpointChanges),
    guard: EndpointGuard,
    at: string,
  ): Promise<{ before: EndpointRecord; after: EndpointRecord }>
  remove(id: number, guard: EndpointGuard): Promise<EndpointRecord>
  countEndpoints(): Promise<number>
  /** The receiver answered 2xx. */
  delivered(id: number, outcome: AttemptOutcome): Promise<void>
  /**
   * An attempt failed: pending again at `retryAt` (epoch ms), or `failed` when it is null. The
   * retry window runs from `firstAttemptAt`, kept from the first failure.
   */
  failed(
    id: number,
    outcome: AttemptOutcome,
    retryAt: number | null,
    firstAttemptAt: number,
  ): Promise<void>
  /**
   * Makes a delivery of the endpoint pending and due at `now` (epoch ms), its attempts and retry
   * window starting over; null when the endpoint has no such delivery.
   */
  retry(endpointId: number, id: number, now: number): Promise<DeliveryRow | null>
}

/** What a database keeps of outbound webhooks: the writes above, reads and the queue. */
export interface OutboundRows extends OutboundWriteRows {
  getEndpoint(id: number): Promise<EndpointRecord | null>
  /** A page of endpoints in id order and the total. */
  pageEndpoints(request: ListRequest): Promise<{ data: EndpointRecord[]; total: number }>
  /** The enabled endpoints, with what they subscribe to. */
  activeEndpoints(): Promise<ActiveEndpoint[]>
  /** The feed position up to which events have been queued; null before the first. */
  dispatchedUpTo(): Promise<FeedPosition | null>
  /**
   * If the dispatcher's place is still `from`: queues the deliveries (once per endpoint and
   * event; none for an endpoint deleted meanwhile) and moves the place to `to`, all in one
   * transaction. False, with nothing written, when another instance moved it first.
   */
  dispatch(
    from: FeedPosition | null,
    to: FeedPosition,
    deliveries: readonly NewDelivery[],
    at: string,
  ): Promise<boolean>
  /**
   * The oldest pending delivery of each enabled endpoint, when it is due at `now` and no
   * sender holds it, leased until `leaseUntil` (epoch ms); at most `limit`, none for the
   * endpoints `excluding`. An endpoint's later deliveries wait for its oldest: in order.
   */
  claimHeads(
    now: number,
    leaseUntil: number,
    limit: number,
    excluding: readonly number[],
  ): Promise<OutgoingDelivery[]>
  /** Gives back claimed deliveries that were not attempted (the sender stopped first). */
  release(ids: readonly number[]): Promise<void>
  /** When the next head of an enabled endpoint falls due (epoch ms), or null when none waits. */
  earliestDue(): Promise<number | null>
  pageDeliveries(endpointId: number, request: DeliveryPageRequest): Promise<DeliveryRow[]>
  getDelivery(endpointId: number, id: number): Promise<DeliveryRow | null>
  /** Deletes up to `limit` finished deliveries made before `cutoff`; how many went. */
  purgeBefore(cutoff: string, limit: number): Promise<number>
}

/** What may change in an endpoint through the API. */
export interface EndpointUpdate {
  url?: string
  description?: string | null
  events?: string[]
  status?: EndpointStatus
}

/** The outbound writes with their rules and audit events, inside a unit of work. */
export interface OutboundWrites {
  create(endpoint: NewEndpoint, startsAfter: FeedPosition, by: AuditSource): Promise<EndpointRecord>
  /**
   * `feedHead` is the live feed's position now: an endpoint enabled again receives the events
   * after it (none of those that came while it was disabled).
   */
  update(
    id: number,
    changes: EndpointUpdate,
    guard: EndpointGuard,
    by: AuditSource,
    feedHead: FeedPosition,
  ): Promise<EndpointRecord>
  /** A new secret; the old one signs beside it until `overlapMs` from now (0: not at all). */
  rotateSecret(
    id: number,
    overlapMs: number,
    guard: EndpointGuard,
    by: AuditSource,
  ): Promise<EndpointRecord>
  remove(id: number, guard: EndpointGuard, by: AuditSource): Promise<EndpointRecord>
  retryDelivery(endpointId: number, id: number, by: AuditSource): Promise<DeliveryView>
  /** A delivery's last attempt in its window failed: it fails, and its endpoint is disabled. */
  gaveUp(delivery: OutgoingDelivery, outcome: AttemptOutcome, reason: string): Promise<void>
}

/** The fields an endpoint's events show (never a secret, only that it changed). */
const AUDITED_FIELDS = ['url', 'description', 'events', 'status', 'disabled_reason'] as const

const endpointTarget = (id: number) => ({ type: 'webhook_endpoint', id: String(id) })

/** The rules of outbound webhooks over a unit of work's rows. */
export function outboundWrites(
  rows: { outbound: OutboundWriteRows; audit: AuditWrites },
  clock: () => number,
): OutboundWrites {
  const { outbound, audit } = rows
  const at = () => new Date(clock()).toISOString()
  const record = (by: AuditSource, id: number, action: string, changes: Changes) =>
    audit.record(by, { action, target: endpointTarget(id), changes })

  return {
    async create(endpoint, startsAfter, by) {
      checkEndpointInput(endpoint)
      if ((await outbound.countEndpoints()) >= MAX_ENDPOINTS) {
        throw conflict(
          `A roster keeps at most ${MAX_ENDPOINTS} webhook endpoints; delete one first`,
        )
      }
      const created = await outbound.insert(
        {
          ...endpoint,
          events: distinctEvents(endpoint.events),
          secret: newEndpointSecret(),
          starts_after: startsAfter,
        },
        at(),
      )
      await record(by, created.id, 'webhook_endpoint.created', {
        ...changedFields(null, created, AUDITED_FIELDS),
        secret: { changed: true },
      })
      return created
    },

    async update(id, changes, guard, by, feedHead) {
      checkEndpointInput(changes)
      const written = (current: EndpointRecord): EndpointChanges => ({
        ...changes,
        ...(changes.events === undefined ? {} : { events: distinctEvents(changes.events) }),
        ...(changes.status === 'disabled' && current.status === 'enabled'
          ? { disabled_reason: 'disabled through the API' }
          : {}),
        // Enabled again: roster's reason no longer holds, and it receives what comes from now.
        ...(changes.status === 'enabled' && current.status === 'disabled'
          ? { disabled_reason: null, starts_after: feedHead }
          : {}),
      })
      const { before, after } = await outbound.update(id, written, guard, at())
      const changed = changedFields(before, after, AUDITED_FIELDS)
      if (Object.keys(changed).length > 0) {
        await record(by, id, 'webhook_endpoint.updated', changed)
      }
      return after
    },

    async rotateSecret(id, overlapMs, guard, by) {
      const until = overlapMs > 0 ? new Date(clock() + overlapMs).toISOString() : null
      const { after } = await outbound.update(
        id,
        (current) => ({
          secret: newEndpointSecret(),
          previous_secret: until === null ? null : current.secret,
          previous_secret_expires_at: until,
        }),
        guard,
        at(),
      )
      await record(by, id, 'webhook_endpoint.secret_rotated', {
        secret: { changed: true },
        previous_secret_expires_at: { before: null, after: after.previous_secret_expires_at },
      })
      return after
    },

    async remove(id, guard, by) {
      const removed = await outbound.remove(id, guard)
      await record(by, id, 'webhook_endpoint.deleted', changedFields(removed, null, AUDITED_FIELDS))
      return removed
    },

    async retryDelivery(endpointId, id, by) {
      const row = await outbound.retry(endpointId, id, clock())
      if (row === null) throw notFound('No delivery with this id for this endpoint')
      await audit.record(by, {
        action: 'webhook_delivery.retried',
        target: { type: 'webhook_delivery', id: String(id) },
        changes: { endpoint_id: { before: null, after: endpointId } },
      })
      return deliveryOfRow(row)
    },

    async gaveUp(delivery, outcome, reason) {
      await outbound.failed(delivery.id, outcome, null, delivery.firstAttemptAt ?? outcome.at)
      const { before, after } = await outbound.update(
        delivery.endpointId,
        { status: 'disabled', disabled_reason: reason },
        { versions: null },
        at(),
      )
      await record(
        SYSTEM,
        delivery.endpointId,
        'webhook_endpoint.disabled',
        changedFields(before, after, ['status', 'disabled_reason']),
      )
    },
  }
}

/** Outbound webhooks as the routes and the console see them. */
export interface EndpointStore {
  create(endpoint: NewEndpoint, by: AuditSource): Promise<EndpointRecord>
  update(
    id: number,
    changes: EndpointUpdate,
    guard: EndpointGuard,
    by: AuditSource,
  ): Promise<EndpointRecord>
  rotateSecret(
    id: number,
    overlapMs: number,
    guard: EndpointGuard,
    by: AuditSource,
  ): Promise<EndpointRecord>
  remove(id: number, guard: EndpointGuard, by: AuditSource): Promise<void>
  get(id: number): Promise<EndpointRecord | null>
  list(request: ListRequest): Promise<{ data: EndpointRecord[]; total: number }>
  deliveries(
    endpointId: number,
    request: DeliveryPageRequest,
  ): Promise<{ data: DeliveryView[]; next: number | null }>
  delivery(endpointId: number, id: number): Promise<DeliveryView | null>
  retryDelivery(endpointId: number, id: number, by: AuditSource): Promise<DeliveryView>
  /** Deletes up to `limit` finished deliveries made before `cutoff` (the housekeeping). */
  purgeDeliveriesBefore(cutoff: string, limit: number): Promise<number>
}

export interface EndpointStoreOptions {
  /** Where deliveries may go (--webhook-allow-private). */
  policy: EgressPolicy
  /** The live feed's position now: a new endpoint receives what comes after it. */
  feedHead: () => Promise<FeedPosition>
  /** Told after every change to endpoints or deliveries (wakes the dispatcher and sender). */
  changed: () => void
}

/** Endpoints with their rules, each write a unit of work of its own. */
export function createEndpointStore(
  rows: OutboundRows,
  transaction: Transaction<{ outbound: OutboundWrites }>,
  options: EndpointStoreOptions,
): EndpointStore {
  const { policy, feedHead, changed } = options
  /** VALIDATION_ERROR for a URL whose host does not resolve, or resolves where roster may not send. */
  const checkDestination = async (url: string) => {
    try {
      await checkedAddresses(new URL(url), policy)
    } catch (error) {
      if (!(error instanceof EgressRefused)) throw error
      const hint = policy.allowPrivate
        ? ''
        : ' (a server started with --webhook-allow-private may send there)'
      throw validationFailed([fieldDetail('url', `${error.message}${hint}`, url)])
    }
  }
  const thenTell = async <T>(write: Promise<T>): Promise<T> => {
    const value = await write
    changed()
    return value
  }
  return {
    async create(endpoint, by) {
      // Shape first (a malformed URL is not looked up), then where it points, outside the unit.
      checkEndpointInput(endpoint)
      await checkDestination(endpoint.url)
      const startsAfter = await feedHead()
      return thenTell(transaction((tx) => tx.outbound.create(endpoint, startsAfter, by)))
    },
    async update(id, changes, guard, by) {
      checkEndpointInput(changes)
      if (changes.url !== undefined) await checkDestination(changes.url)
      const head = await feedHead()
      return thenTell(transaction((tx) => tx.outbound.update(id, changes, guard, by, head)))
    },
    rotateSecret: (id, overlapMs, guard, by) =>
      thenTell(transaction((tx) => tx.outbound.rotateSecret(id, overlapMs, guard, by))),
    async remove(id, guard, by) {
      await thenTell(transaction((tx) => tx.outbound.remove(id, guard, by)))
    },
    get: (id) => rows.getEndpoint(id),
    list: (request) => rows.pageEndpoints(request),
    async deliveries(endpointId, request) {
      const found = await rows.pageDeliveries(endpointId, request)
      const more = found.length > request.limit
      const data = (more ? found.slice(0, request.limit) : found).map(deliveryOfRow)
      return { data, next: more ? (data.at(-1)?.id ?? null) : null }
    },
    async delivery(endpointId, id) {
      const row = await rows.getDelivery(endpointId, id)
      return row === null ? null : deliveryOfRow(row)
    },
    retryDelivery: (endpointId, id, by) =>
      thenTell(transaction((tx) => tx.outbound.retryDelivery(endpointId, id, by))),
    purgeDeliveriesBefore: (cutoff, limit) => rows.purgeBefore(cutoff, limit),
  }
}
