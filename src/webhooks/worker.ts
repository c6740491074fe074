import type { Transaction } from '../db/unit'
import type { Logger } from '../log'
import { DrainSchedule, type RetryPolicy, retryAt, type Timers } from '../timers'
import type { HandlerStores, ParsedEvent, WebhookHandler } from './handlers'
import type { InboxEvent, InboxOutcomes, WebhookInbox } from './inbox'

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1000, capMs: 60 * 60 * 1000, maxAttempts: 10 }

/** Due events claimed at once. */
const BATCH_SIZE = 64
/**
 * Handler work per slice before it commits and gives the event loop a turn: requests that
 * arrive meanwhile wait at most about this long (plus one fsync).
 */
const SLICE_MS = 2

type Status = 'processed' | 'ignored' | 'failed'

/** What the worker's units of work see: the handlers' stores and the inbox's outcome writes. */
export type WorkerStores = HandlerStores & { inbox: InboxOutcomes }

/** A handler's own failure (its writes are rolled back; the event is retried later). */
class HandlerFailure {
  constructor(readonly cause: unknown) {}
}

function parse(event: InboxEvent): ParsedEvent {
  const { data } = JSON.parse(event.payload) as { data: ParsedEvent['data'] }
  return { ...event, data }
}

/**
 * Handles inbox events off the request path, oldest due first. It is woken
 * after an event is committed (the answer has left by then), and at start, when it picks up
 * what a crash or a stop left pending or failed. A failure is retried with exponential
 * backoff (1 s, 2 s, 4 s … up to an hour, ten attempts). Each event is handled in a unit of
 * work of its own: the handler's writes and the event's new status commit together (so an
 * event is never handled twice), and a failing handler's writes are rolled back alone.
 */
export class WebhookWorker {
  readonly handlers: Map<string, WebhookHandler>
  retry: RetryPolicy = DEFAULT_RETRY
  private readonly schedule: DrainSchedule
  /** Called after each event is handled (for metrics). */
  onHandled: (event: InboxEvent, status: 'processed' | 'ignored' | 'failed') => void = () => {}

  constructor(
    private readonly inbox: WebhookInbox,
    private readonly transaction: Transaction<WorkerStores>,
    handlers: Map<string, WebhookHandler>,
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {
    this.handlers = handlers
    this.schedule = new DrainSchedule(
      timers,
      () => this.drain(),
      () => inbox.earliestDue(),
      (error) =>
        // The database refused a write (disk full, I/O error): nothing was lost, the events
        // are still due.
        log.error('webhook worker could not store an outcome; retrying in 1 s', {
          error: error instanceof Error ? error.message : String(error),
        }),
    )
  }

  /**
   * How often to look for due events when none is known here (a shared inbox, where other
   * instances record them); null for an inbox only this process writes.
   */
  get pollMs(): number | null {
    return this.schedule.pollMs
  }

  set pollMs(ms: number | null) {
    this.schedule.pollMs = ms
  }

  private now(): number {
    return this.timers.now()
  }

  /** Starts handling, beginning with whatever is already due. */
  start(): void {
    this.schedule.start()
  }

  /** Something new may be due: handle it soon (after the current turn, so after the answer). */
  wake(): void {
    this.schedule.wake()
  }

  /** Stops taking new events; resolves when the one being handled has finished. */
  stop(): Promise<void> {
    return this.schedule.stop()
  }

  /** Resolves when nothing is due and nothing is being handled (for tests). */
  settled(): Promise<void> {
    return this.schedule.settled()
  }

  private async drain(): Promise<void> {
    while (!this.schedule.stopped) {
      const due = await this.inbox.claimDue(BATCH_SIZE)
      if (due.length === 0) return
      // Every unit is started at once: they run one after another inside the same group
      // transaction (one fsync for the slice); those that find the slice's time used up do
      // nothing and are claimed again by the next slice.
      const started = performance.now()
      const statuses = await Promise.all(
        due.map((event, index) =>
          this.handle(event, () => index === 0 || performance.now() - started <= SLICE_MS),
        ),
      )
      const unhandled: number[] = []
      due.forEach((event, index) => {
        const status = statuses[index]
        if (status !== undefined && status !== null) this.onHandled(event, status)
        else unhandled.push(event.seq)
      })
      await this.inbox.release(unhandled)
      // Yield between slices: a backlog must not hold up incoming requests.
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  /**
   * One event in a unit of work of its own; null when `inSlice` said the slice was over. A
   * handler's error rolls its writes back and is recorded in a unit after it; any other error
   * (the database refused a write) goes up to `drain`.
   */
  private async handle(event: InboxEvent, inSlice: () => boolean): Promise<Status | null> {
    try {
      return await this.transaction(async (tx) => {
        if (!inSlice()) return null
        const handler = this.handlers.get(event.type)
        let status: 'processed' | 'ignored' = 'ignored'
        if (handler !== undefined) {
          try {
            status = await handler(parse(event), tx)
          } catch (error) {
            throw new HandlerFailure(error)
          }
        }
        await tx.inbox.finish(event.seq, status)
        return status
      })
    } catch (error) {
      if (!(error instanceof HandlerFailure)) throw error
      await this.transaction((tx) => this.recordFailure(tx.inbox, event, error.cause))
      return 'failed'
    }
  }

  private async recordFailure(
    inbox: InboxOutcomes,
    event: InboxEvent,
    error: unknown,
  ): Promise<void> {
    const attempts = event.attempts + 1
    const message = error instanceof Error ? error.message : String(error)
    const nextAt = retryAt(this.retry, attempts, this.now())
    await inbox.fail(event.seq, message, nextAt)
    this.log.warn('webhook handler failed', {
      event_id: event.eventId,
      type: event.type,
      attempts,
      error: message,
      retry_at: nextAt === null ? null : new Date(nextAt).toISOString(),
    })
  }
}
