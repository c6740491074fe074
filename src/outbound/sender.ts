import type { Transaction } from '../db/unit'
import type { Logger } from '../log'
import { DrainSchedule, type Timers } from '../timers'
import type { AttemptOutcome, OutgoingDelivery } from './deliveries'
import { signingSecrets } from './endpoints'
import { signDelivery } from './signing'
import type { OutboundRows, OutboundWrites } from './store'

/** What a receiver answered, as the sender needs it. */
export interface ReceiverAnswer {
  status: number
  body: string
  ms: number
}

/** Sends one delivery's bytes; rejects when nothing came back (refused, unreachable, timed out). */
export type Post = (
  url: URL,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal: AbortSignal,
) => Promise<ReceiverAnswer>

export interface SenderPolicy {
  /** The first retry's delay; each further one doubles it, up to `capMs`. */
  baseMs: number
  capMs: number
  /** How long after its first attempt a delivery is still retried (--webhook-retry-window). */
  windowMs: number
  /** Deliveries in flight at once, to different endpoints (one at a time per endpoint). */
  concurrency: number
  /** How long a receiver has to answer an attempt. */
  timeoutMs: number
  /** How long a claim is this instance's alone: longer than an attempt may take. */
  leaseMs: number
}

/** 5 s, 10 s, 20 s … doubling up to 6 hours between attempts, for 3 days. */
export const DEFAULT_SENDER_POLICY: SenderPolicy = {
  baseMs: 5000,
  capMs: 6 * 60 * 60 * 1000,
  windowMs: 3 * 24 * 60 * 60 * 1000,
  concurrency: 8,
  timeoutMs: 15_000,
  // An attempt's longest, and time to record it: a delivery whose instance died waits this long.
  leaseMs: 25_000,
}

/**
 * Sends queued deliveries: the oldest pending delivery of each enabled endpoint, several
 * endpoints at once but one delivery at a time per endpoint, so each receives its events in
 * order. A 2xx marks it delivered and its endpoint's next one is taken at once; anything else
 * (another status, no answer, a refused address) is retried with exponential backoff until the
 * retry window has passed since the first attempt: then it fails and its endpoint is disabled
 * (the console shows why), its later deliveries kept for when it is enabled again. On a shared
 * database a claim is a lease, so each delivery is attempted by one instance at a time, and one
 * an instance died holding is taken up once its lease lapses.
 *
 * At least once: a crash between the receiver's 2xx and its record sends it again, with the
 * same `webhook-id`, which receivers use to drop the copy.
 */
export class WebhookSender {
  policy: SenderPolicy = DEFAULT_SENDER_POLICY
  private readonly schedule: DrainSchedule
  /** Attempts under way, by endpoint. */
  private readonly inFlight = new Map<number, Promise<void>>()
  private readonly stopping = new AbortController()
  private signal: (() => void) | null = null
  /** Something happened while the drain was busy (an attempt ended, a wake-up): look again. */
  private poked = false

  constructor(
    private readonly rows: OutboundRows,
    private readonly transaction: Transaction<{ outbound: OutboundWrites }>,
    private readonly post: Post,
    private readonly timers: Timers,
    private readonly log: Logger,
    private readonly userAgent: string,
  ) {
    this.schedule = new DrainSchedule(
      timers,
      () => this.drain(),
      () => rows.earliestDue(),
      (error) =>
        log.error('webhook sender could not record an attempt; retrying in 1 s', {
          error: error instanceof Error ? error.message : String(error),
        }),
    )
  }

  /** How often to look for deliveries other instances queued (a shared database). */
  set pollMs(ms: number | null) {
    this.schedule.pollMs = ms
  }

  start(): void {
    this.schedule.start()
  }

  /** Deliveries may be due: take them soon (also mid-drain, between attempts). */
  wake(): void {
    this.poke()
    this.schedule.wake()
  }

  private poke(): void {
    this.poked = true
    this.signal?.()
  }

  /** Takes nothing new and cuts the attempts under way short (they stay pending). */
  async stop(): Promise<void> {
    this.stopping.abort()
    this.poke()
    await this.schedule.stop()
  }

  /** Resolves when nothing is due and nothing is under way (for tests). */
  settled(): Promise<void> {
    return this.schedule.settled()
  }

  private async drain(): Promise<void> {
    while (!this.schedule.stopped) {
      const room = this.policy.concurrency - this.inFlight.size
      const now = this.timers.now()
      const claimed =
        room > 0
          ? await this.rows.claimHeads(now, now + this.policy.leaseMs, room, [
              ...this.inFlight.keys(),
            ])
          : []
      for (const delivery of claimed) {
        const attempt = this.attempt(delivery)
          .catch((error: unknown) =>
            // The outcome could not be stored: the lease lapses and the delivery is tried again.
            this.log.error('webhook sender could not record an attempt', {
              delivery_id: delivery.id,
              error: error instanceof Error ? error.message : String(error),
            }),
          )
          .finally(() => {
            this.inFlight.delete(delivery.endpointId)
            this.poke()
          })
        this.inFlight.set(delivery.endpointId, attempt)
      }
      if (claimed.length > 0 && this.inFlight.size < this.policy.concurrency) continue
      if (this.inFlight.size === 0) return
      if (this.poked) {
        this.poked = false
        continue
      }
      // Until an attempt ends (its endpoint's next delivery may be due) or a wake-up comes.
      await new Promise<void>((resolve) => {
        this.signal = resolve
      })
      this.signal = null
      this.poked = false
    }
    await Promise.allSettled(this.inFlight.values())
  }

  private async attempt(delivery: OutgoingDelivery): Promise<void> {
    const at = this.timers.now()
    let outcome: AttemptOutcome
    try {
      const answer = await this.post(
        new URL(delivery.url),
        delivery.payload,
        this.headersOf(delivery, at),
        this.policy.timeoutMs,
        this.stopping.signal,
      )
      const ok = answer.status >= 200 && answer.status < 300
      outcome = {
        at,
        status: answer.status,
        body: answer.body,
        ms: answer.ms,
        error: ok ? null : statusProblem(answer.status),
      }
    } catch (error) {
      if (this.stopping.signal.aborted) {
        // Cut short by shutdown: not a failure of the receiver; the next start sends it again.
        await this.rows.release([delivery.id])
        return
      }
      outcome = { at, status: null, body: null, ms: this.timers.now() - at, error: reasonOf(error) }
    }
    if (outcome.error === null) {
      await this.rows.delivered(delivery.id, outcome)
      return
    }
    await this.recordFailure(delivery, outcome)
  }

  private headersOf(delivery: OutgoingDelivery, at: number): Record<string, string> {
    const secrets = signingSecrets(delivery, new Date(at).toISOString())
    return {
      'content-type': 'application/json',
      'user-agent': this.userAgent,
      ...signDelivery(delivery.eventId, Math.floor(at / 1000), delivery.payload, secrets),
    }
  }

  private async recordFailure(delivery: OutgoingDelivery, outcome: AttemptOutcome): Promise<void> {
    const { baseMs, capMs, windowMs } = this.policy
    const first = delivery.firstAttemptAt ?? outcome.at
    const retryAt = outcome.at + Math.min(capMs, baseMs * 2 ** delivery.attempts)
    const fields = {
      delivery_id: delivery.id,
      endpoint_id: delivery.endpointId,
      event_id: delivery.eventId,
      attempts: delivery.attempts + 1,
      error: outcome.error,
    }
    if (retryAt <= first + windowMs) {
      await this.rows.failed(delivery.id, outcome, retryAt, first)
      this.log.warn('webhook delivery failed; retrying', {
        ...fields,
        retry_at: new Date(retryAt).toISOString(),
      })
      return
    }
    const reason = `Every attempt to deliver ${delivery.eventId} failed for ${duration(outcome.at - first)} (last: ${outcome.error})`
    await this.transaction((tx) => tx.outbound.gaveUp(delivery, outcome, reason))
    this.log.warn('webhook delivery failed for good; its endpoint is disabled', fields)
  }
}

function statusProblem(status: number): string {
  if (status >= 300 && status < 400) return `HTTP ${status} (redirects are not followed)`
  return `HTTP ${status}`
}

/** Why an attempt got no answer, in a line (no stack). */
function reasonOf(error: unknown): string {
  const { name, code, message } = error as { name?: string; code?: string; message?: string }
  if (name === 'TimeoutError') return 'no answer in time (timed out)'
  // A refusal of roster's own (an address not allowed) says everything in its message.
  const text =
    code === undefined && (name === 'Error' || name === undefined)
      ? (message ?? String(error))
      : `${code ?? name}: ${message ?? String(error)}`
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/** 3 days, 36 hours, 12 minutes, 45 seconds: the largest whole unit. */
function duration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ]
  for (const [size, name] of units) {
    const count = Math.floor(ms / size)
    if (count >= 2 || (count === 1 && size === 1000)) return `${count} ${name}s`
    if (count === 1) return `1 ${name}`
  }
  return `${ms} ms`
}
