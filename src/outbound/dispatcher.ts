import type { AuditFeed, FeedEntry, FeedPosition } from '../audit/log'
import type { Logger } from '../log'
import { DrainSchedule, type Timers } from '../timers'
import { type NewDelivery, payloadOf } from './deliveries'
import { subscribes } from './endpoints'
import type { ActiveEndpoint, OutboundRows } from './store'

/** Events read from the feed per dispatch. */
const BATCH = 500

/** After a wake-up that found nothing new, look again this often, this many times (see below). */
const RECHECK_MS = 100
const RECHECKS = 8

/**
 * Turns the audit log into deliveries: follows the live feed (commit order, positions final
 * once read) from the place it last reached, queues one delivery per event and subscribed
 * endpoint, and moves the place in the same transaction, so an event is queued once however
 * often this runs and whichever instance runs it (a second instance finds the place moved and
 * reads again). An endpoint receives only events after the feed's head when it was made.
 *
 * With no enabled endpoint it does nothing at all: the write path of a roster that sends no
 * webhooks pays a boolean test per commit.
 */
export class Dispatcher {
  private readonly schedule: DrainSchedule
  /** What the last read found enabled; null until read (or after a change). */
  private known: ActiveEndpoint[] | null = null
  private recheckAt: number | null = null
  private rechecks = 0
  private stopWatching: (() => void) | null = null

  constructor(
    private readonly rows: OutboundRows,
    private readonly feed: AuditFeed,
    private readonly timers: Timers,
    log: Logger,
    /** Told when deliveries were queued (wakes the sender). */
    private readonly queued: () => void,
  ) {
    this.schedule = new DrainSchedule(
      timers,
      () => this.drain(),
      async () => this.recheckAt,
      (error) =>
        log.error('webhook dispatcher could not queue deliveries; retrying in 1 s', {
          error: error instanceof Error ? error.message : String(error),
        }),
    )
  }

  /** How often to look for endpoints and events other instances made (a shared database). */
  set pollMs(ms: number | null) {
    this.schedule.pollMs = ms
  }

  async start(): Promise<void> {
    this.stopWatching = await this.feed.watch(() => this.wake())
    this.schedule.start()
  }

  async stop(): Promise<void> {
    this.stopWatching?.()
    this.stopWatching = null
    await this.schedule.stop()
  }

  /** Events may have been committed. */
  wake(): void {
    if (this.known !== null && this.known.length === 0) return
    this.rechecks = RECHECKS
    this.schedule.wake()
  }

  /** An endpoint was made, changed or deleted: read them again. */
  endpointsChanged(): void {
    this.known = null
    this.schedule.wake()
  }

  /** Resolves when every event committed so far is queued (for tests). */
  settled(): Promise<void> {
    return this.schedule.settled()
  }

  private async drain(): Promise<void> {
    while (!this.schedule.stopped) {
      const endpoints = await this.rows.activeEndpoints()
      this.known = endpoints
      if (endpoints.length === 0) return this.foundNothing()
      const reached = await this.rows.dispatchedUpTo()
      const entries = await this.feed.after(startOf(reached, endpoints), BATCH)
      if (entries.length === 0) return this.foundNothing()
      const last = (entries.at(-1) as FeedEntry).position
      const deliveries = deliveriesOf(entries, endpoints)
      const moved = await this.rows.dispatch(
        reached,
        last,
        deliveries,
        new Date(this.timers.now()).toISOString(),
      )
      // Not moved: another instance queued these first; read on from where it stopped.
      if (moved && deliveries.length > 0) this.queued()
      if (moved && entries.length < BATCH) return this.foundNothing()
    }
  }

  /**
   * On PostgreSQL an event shows in the feed only once older transactions have ended: the one
   * that woke us may not be readable yet, so look again shortly, a few times.
   */
  private foundNothing(): void {
    if (this.rechecks > 0) {
      this.rechecks -= 1
      this.recheckAt = this.timers.now() + RECHECK_MS
    } else {
      this.recheckAt = null
    }
  }
}

/** Where to read from: the place reached, or the oldest endpoint's start if that is later. */
function startOf(reached: FeedPosition | null, endpoints: readonly ActiveEndpoint[]): FeedPosition {
  // Positions compare as text (they are zero-padded so that text order is feed order).
  const earliest = endpoints.map((endpoint) => endpoint.starts_after).sort()[0] as FeedPosition
  return reached === null || reached < earliest ? earliest : reached
}

/** One delivery per event and endpoint that subscribes to it and was made before it. */
function deliveriesOf(
  entries: readonly FeedEntry[],
  endpoints: readonly ActiveEndpoint[],
): NewDelivery[] {
  const deliveries: NewDelivery[] = []
  for (const { event, position } of entries) {
    let payload: string | null = null
    for (const endpoint of endpoints) {
      if (position <= endpoint.starts_after || !subscribes(endpoint.events, event.action)) continue
      payload ??= JSON.stringify(payloadOf(event))
      deliveries.push({ endpointId: endpoint.id, eventId: event.id, type: event.action, payload })
    }
  }
  return deliveries
}
