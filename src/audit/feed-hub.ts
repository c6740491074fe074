import type { Timers } from '../timers'
import type { AuditFeed, FeedEntry, FeedPosition } from './log'

/** One reader of the live feed (an SSE stream). */
export interface FeedSubscriber {
  /**
   * Events after the subscriber's place, in order. False when it cannot take more now (its
   * client reads too slowly): the hub drops it, and the client resumes from its last event.
   */
  deliver(entries: readonly FeedEntry[]): boolean
  /**
   * Resolves once the subscriber can take more without a backlog (its client has read what
   * was queued), or it has ended. A catch-up waits on it before each event, so a client far
   * behind gets its backlog as fast as it reads, and nothing piles up for it meanwhile.
   */
  ready(): Promise<void>
  /** Nothing happened for a while; false drops it as `deliver` does. */
  heartbeat(): boolean
  /** The hub let go of it (dropped, or shutting down). */
  close(): void
}

export interface FeedHubOptions {
  /** How often the table is read while anyone listens, whether or not a wake-up came. */
  pollMs: number
  /** How often every subscriber gets a heartbeat. */
  heartbeatMs: number
}

export const FEED_DEFAULTS: FeedHubOptions = { pollMs: 2000, heartbeatMs: 15_000 }

/** Events read per statement, by the hub and by a subscriber catching up. */
const BATCH = 500

/** Re-reads after a wake-up that found nothing yet (PostgreSQL holds back a young commit). */
const RETRY_DELAYS_MS = [25, 50, 100, 200, 400, 800]

interface Subscription {
  readonly subscriber: FeedSubscriber
  /** The last position it was given (or started after). */
  cursor: FeedPosition
  /** Caught up: the hub hands it what it reads. */
  live: boolean
  closed: boolean
}

/**
 * Fans the audit log out to live subscribers with one reader per instance, whatever their
 * number: a commit wakes it (this instance's, or another's through LISTEN/NOTIFY), it reads what
 * is new from the table once and hands it to every subscriber that is caught up. A subscriber
 * resuming from an older place reads from the table on its own until it has caught up, then
 * joins. Idle subscribers cost a heartbeat every 15 s and one read every 2 s for all of them.
 */
export class FeedHub {
  private readonly subscriptions = new Set<Subscription>()
  private head: FeedPosition | null = null
  private starting: Promise<void> | null = null
  private stopWatching: (() => void) | null = null
  private cancelPoll: (() => void) | null = null
  private cancelHeartbeat: (() => void) | null = null
  private cancelRetry: (() => void) | null = null
  private reading = false
  private readAgain = false
  private retries = 0
  private closed = false

  constructor(
    private readonly feed: AuditFeed,
    private readonly timers: Timers,
    private readonly options: FeedHubOptions = FEED_DEFAULTS,
  ) {}

  /** How many subscribers are connected (for /metrics and tests). */
  get size(): number {
    return this.subscriptions.size
  }

  /**
   * Starts delivering to `subscriber` the events after `from` (a position it was given before,
   * from Last-Event-ID), or after the events committed so far when `from` is null. Resolves to
   * a function that ends the subscription.
   */
  async subscribe(from: FeedPosition | null, subscriber: FeedSubscriber): Promise<() => void> {
    if (this.closed) {
      subscriber.close()
      return () => {}
    }
    await this.start()
    const subscription: Subscription = {
      subscriber,
      cursor: from ?? (this.head as FeedPosition),
      live: false,
      closed: false,
    }
    this.subscriptions.add(subscription)
    void this.catchUp(subscription).catch(() => this.drop(subscription))
    return () => this.remove(subscription)
  }

  /** Ends every subscription and stops reading (the server is stopping). */
  close(): void {
    this.closed = true
    for (const subscription of [...this.subscriptions]) this.drop(subscription)
    this.stop()
  }

  private async start(): Promise<void> {
    this.starting ??= (async () => {
      this.head = await this.feed.head()
      this.stopWatching = await this.feed.watch(() => this.wake())
      this.schedulePoll()
      this.scheduleHeartbeat()
    })()
    try {
      await this.starting
    } catch (error) {
      this.starting = null
      throw error
    }
  }

  private stop(): void {
    this.stopWatching?.()
    this.cancelPoll?.()
    this.cancelHeartbeat?.()
    this.cancelRetry?.()
    this.stopWatching = this.cancelPoll = this.cancelHeartbeat = this.cancelRetry = null
    this.starting = null
    this.head = null
  }

  /** A commit may have happened: read what is new, now or right after the read under way. */
  private wake(): void {
    this.retries = 0
    // Not inside the caller: on SQLite that is the writer's commit, which must not wait on a read.
    queueMicrotask(() => void this.pump())
  }

  private async pump(): Promise<void> {
    if (this.reading) {
      this.readAgain = true
      return
    }
    this.reading = true
    try {
      do {
        this.readAgain = false
        const found = await this.readNew()
        if (found > 0) this.retries = 0
        else this.retryLater()
      } while (this.readAgain && !this.closed)
    } catch {
      // The database did not answer: the poll tries again.
    } finally {
      this.reading = false
    }
  }

  /** Reads the table from the hub's place to its end, handing each batch to the live. */
  private async readNew(): Promise<number> {
    let found = 0
    while (this.head !== null) {
      const entries = await this.feed.after(this.head, BATCH)
      if (entries.length === 0 || this.head === null) break
      this.head = (entries.at(-1) as FeedEntry).position
      found += entries.length
      for (const subscription of this.subscriptions) {
        if (subscription.live) this.send(subscription, entries)
      }
      if (entries.length < BATCH) break
    }
    return found
  }

  /** A wake-up found nothing: the commit may not be visible in the feed yet; look again soon. */
  private retryLater(): void {
    const delay = RETRY_DELAYS_MS[this.retries]
    if (delay === undefined || this.cancelRetry !== null) return
    this.retries += 1
    this.cancelRetry = this.timers.after(delay, () => {
      this.cancelRetry = null
      void this.pump()
    })
  }

  private schedulePoll(): void {
    this.cancelPoll = this.timers.after(this.options.pollMs, () => {
      if (this.closed || this.subscriptions.size === 0) return
      void this.pump().finally(() => this.schedulePoll())
    })
  }

  private scheduleHeartbeat(): void {
    this.cancelHeartbeat = this.timers.after(this.options.heartbeatMs, () => {
      for (const subscription of [...this.subscriptions]) {
        if (!subscription.subscriber.heartbeat()) this.drop(subscription)
      }
      if (!this.closed && this.subscriptions.size > 0) this.scheduleHeartbeat()
    })
  }

  /**
   * Reads from the table for a subscriber behind the hub, until it has caught up. Each event is
   * handed over once the subscriber is ready for it: the pace is the client's, so a client that
   * reads keeps its connection however far behind it starts (only the live feed, which cannot
   * wait for one client, can leave it too much unread).
   */
  private async catchUp(subscription: Subscription): Promise<void> {
    for (;;) {
      if (subscription.closed) return
      const entries = await this.feed.after(subscription.cursor, BATCH)
      for (const entry of entries) {
        await subscription.subscriber.ready()
        if (subscription.closed || !this.send(subscription, [entry])) return
      }
      if (subscription.closed) return
      if (entries.length === BATCH) continue
      // Synchronous from here: the hub cannot read in between, so nothing falls in a gap.
      if (this.head !== null && subscription.cursor < this.head) continue
      subscription.live = true
      return
    }
  }

  /** Hands the entries past the subscription's place over; drops it if it cannot keep up. */
  private send(subscription: Subscription, entries: readonly FeedEntry[]): boolean {
    const fresh = entries.filter((entry) => entry.position > subscription.cursor)
    if (fresh.length === 0) return true
    subscription.cursor = (fresh.at(-1) as FeedEntry).position
    if (subscription.subscriber.deliver(fresh)) return true
    this.drop(subscription)
    return false
  }

  private drop(subscription: Subscription): void {
    if (subscription.closed) return
    this.remove(subscription)
    subscription.subscriber.close()
  }

  private remove(subscription: Subscription): void {
    subscription.closed = true
    this.subscriptions.delete(subscription)
    if (this.subscriptions.size === 0) this.stop()
  }
}
