import type { Database } from 'bun:sqlite'
import type { WriteQueue } from '../db/write-queue'
import type { Logger } from '../log'
import type { Timers } from '../timers'
import type { HandlerOutcome, ParsedEvent, WebhookHandler } from './handlers'
import type { InboxEvent, WebhookInbox } from './inbox'

export interface RetryPolicy {
  /** Delay before the first retry; each further one doubles it. */
  baseMs: number
  /** The longest delay between two attempts. */
  capMs: number
  /** After this many failed attempts the event stays failed and is not tried again. */
  maxAttempts: number
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1000, capMs: 60 * 60 * 1000, maxAttempts: 10 }

/** Due events read at once. */
const BATCH_SIZE = 64
/**
 * Handler work per transaction before it commits and gives the event loop a turn: requests
 * that arrive meanwhile wait at most about this long (plus one fsync).
 */
const SLICE_MS = 2

/** The pause after the database refused the worker's write. */
const STORAGE_RETRY_MS = 1000

type Outcome = [InboxEvent, 'processed' | 'ignored' | 'failed']

/** An event whose handler returned a promise, handed out of the transaction to be awaited. */
interface Awaiting {
  event: InboxEvent
  result: Promise<HandlerOutcome>
}

function parse(event: InboxEvent): ParsedEvent {
  const { data } = JSON.parse(event.payload) as { data: ParsedEvent['data'] }
  return { ...event, data }
}

/**
 * Whether a handler's result is a promise: then it is awaited outside the batch's transaction,
 * whatever the handler was declared as (an `async` function, or a plain one returning a
 * promise).
 */
function isPending(
  result: HandlerOutcome | Promise<HandlerOutcome>,
): result is Promise<HandlerOutcome> {
  return typeof (result as { then?: unknown } | null)?.then === 'function'
}

/**
 * Handles inbox events off the request path, oldest due first. It is woken
 * after an event is committed (the answer has left by then), and at start, when it picks up
 * what a crash or a stop left pending or failed. A failure is retried with exponential
 * backoff (1 s, 2 s, 4 s … up to an hour, ten attempts). A synchronous handler's writes and
 * the event's new status commit together, so an event is never handled twice.
 */
export class WebhookWorker {
  readonly handlers: Map<string, WebhookHandler>
  retry: RetryPolicy = DEFAULT_RETRY
  private draining: Promise<void> | null = null
  /** Cancels the pending wake-up, if one is set. */
  private cancelTimer: (() => void) | null = null
  private timerAt = 0
  private stopped = true
  /** Called after each event is handled (for metrics). */
  onHandled: (event: InboxEvent, status: 'processed' | 'ignored' | 'failed') => void = () => {}

  constructor(
    private readonly inbox: WebhookInbox,
    private readonly sqlite: Database,
    private readonly writes: WriteQueue,
    handlers: Map<string, WebhookHandler>,
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {
    this.handlers = handlers
  }

  private now(): number {
    return this.timers.now()
  }

  /** Starts handling, beginning with whatever is already due. */
  start(): void {
    this.stopped = false
    this.wake()
  }

  /** Something new may be due: handle it soon (after the current turn, so after the answer). */
  wake(): void {
    if (this.stopped) return
    this.schedule(0)
  }

  /** Stops taking new events; resolves when the one being handled has finished. */
  async stop(): Promise<void> {
    this.stopped = true
    this.cancelTimer?.()
    this.cancelTimer = null
    await this.draining
  }

  /** Resolves when nothing is due and nothing is being handled (for tests). */
  async settled(): Promise<void> {
    for (;;) {
      await this.draining
      await Bun.sleep(1)
      const due = this.inbox.earliestDue()
      if (this.draining === null && (due === null || due > this.now())) return
    }
  }

  private schedule(delayMs: number): void {
    const at = this.now() + delayMs
    // A pending timer that fires sooner stands: waking on every delivery must not keep pushing
    // the handling back while deliveries keep arriving.
    if (this.cancelTimer !== null && this.timerAt <= at) return
    this.cancelTimer?.()
    this.timerAt = at
    // Now means after this turn (after the answer), on the event loop; later means on the
    // clock, so that tests can move it instead of sleeping.
    const wait = (run: () => void) => {
      if (delayMs > 0) return this.timers.after(delayMs, run)
      const timer = setTimeout(run, 0)
      return () => clearTimeout(timer)
    }
    this.cancelTimer = wait(() => {
      this.cancelTimer = null
      let storageFailed = false
      this.draining ??= this.drain()
        .catch((error: unknown) => {
          // The database refused a write (disk full, I/O error): nothing was lost, the events
          // are still due; try again shortly rather than spin.
          storageFailed = true
          this.log.error('webhook worker could not store an outcome; retrying in 1 s', {
            error: error instanceof Error ? error.message : String(error),
          })
        })
        .finally(() => {
          this.draining = null
          if (storageFailed && !this.stopped) this.schedule(STORAGE_RETRY_MS)
          else this.scheduleNextRetry()
        })
    })
  }

  private scheduleNextRetry(): void {
    if (this.stopped) return
    const due = this.inbox.earliestDue()
    if (due !== null) this.schedule(Math.max(0, due - this.now()))
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const slice = await this.writes.run(() => this.handleSlice())
      for (const [event, status] of slice.outcomes) this.onHandled(event, status)
      if (slice.awaiting !== null) await this.handleAsync(slice.awaiting)
      else if (slice.outcomes.length === 0) return
      // Yield between slices: a backlog must not hold up incoming requests (a synchronous
      // handler never gives I/O a turn on its own).
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Inside one write of the group commit (so it shares the fsync with the requests of the
   * same turn): reads what is due and runs synchronous handlers, as many events as fit in
   * SLICE_MS, each in its own savepoint: its writes and its new status commit together, and a
   * failure rolls back that event alone. Stops at a handler that returns a promise and hands
   * it back, to be awaited outside the transaction (what it wrote before its first await
   * commits with the slice).
   */
  private handleSlice(): { outcomes: Outcome[]; awaiting: Awaiting | null } {
    const started = performance.now()
    const outcomes: Outcome[] = []
    const attempt = this.sqlite.transaction((event: InboxEvent, handler: WebhookHandler) => {
      const result = handler(parse(event))
      // A promise: its outcome is recorded once it settles, in a write of its own.
      if (!isPending(result)) this.inbox.finish(event.seq, result)
      return result
    })
    for (const event of this.inbox.dueBatch(BATCH_SIZE)) {
      const handler = this.handlers.get(event.type)
      if (outcomes.length > 0 && performance.now() - started > SLICE_MS) break
      if (handler === undefined) {
        this.inbox.finish(event.seq, 'ignored')
        outcomes.push([event, 'ignored'])
        continue
      }
      try {
        const result = attempt(event, handler)
        if (isPending(result)) {
          // Settles later; until it is awaited, a rejection must not count as unhandled.
          result.catch(() => {})
          return { outcomes, awaiting: { event, result } }
        }
        outcomes.push([event, result])
      } catch (error) {
        this.recordFailure(event, error)
        outcomes.push([event, 'failed'])
      }
    }
    return { outcomes, awaiting: null }
  }

  /** Waits for a handler's promise outside the transaction, then records its outcome. */
  private async handleAsync({ event, result }: Awaiting): Promise<void> {
    let outcome: HandlerOutcome
    try {
      outcome = await result
    } catch (error) {
      await this.writes.run(() => this.recordFailure(event, error))
      this.onHandled(event, 'failed')
      return
    }
    await this.writes.run(() => this.inbox.finish(event.seq, outcome))
    this.onHandled(event, outcome)
  }

  private recordFailure(event: InboxEvent, error: unknown): void {
    const attempts = event.attempts + 1
    const message = error instanceof Error ? error.message : String(error)
    const retryAt =
      attempts >= this.retry.maxAttempts
        ? null
        : this.now() + Math.min(this.retry.capMs, this.retry.baseMs * 2 ** (attempts - 1))
    this.inbox.fail(event.seq, message, retryAt)
    this.log.warn('webhook handler failed', {
      event_id: event.eventId,
      type: event.type,
      attempts,
      error: message,
      retry_at: retryAt === null ? null : new Date(retryAt).toISOString(),
    })
  }
}
