/**
 * Waiting on a clock: the workers' retries wait on this rather than on setTimeout
 * directly, so tests drive them with a ManualClock instead of sleeping.
 */
export interface Timers {
  /** Epoch milliseconds. */
  now(): number
  /** Runs `run` once `ms` have passed on this clock; the result cancels it. */
  after(ms: number, run: () => void): () => void
}

export const systemTimers: Timers = {
  now: Date.now,
  after(ms, run) {
    const timer = setTimeout(run, ms)
    return () => clearTimeout(timer)
  },
}

/** `work`, or a rejection with `message` once `ms` have passed (for health checks). */
export async function withinMs<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: Timer | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A clock that moves only when told to (for tests); due timers run in time order. */
export class ManualClock implements Timers {
  private pending: { at: number; run: () => void }[] = []

  constructor(private time: number) {}

  now = (): number => this.time

  /** The same instant as a Date, for makeDeps's `now`. */
  date = (): Date => new Date(this.time)

  after(ms: number, run: () => void): () => void {
    const entry = { at: this.time + Math.max(0, ms), run }
    this.pending.push(entry)
    return () => {
      this.pending = this.pending.filter((other) => other !== entry)
    }
  }

  /** Moves the clock forward and runs every timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.time + ms
    for (;;) {
      const next = this.pending.filter((entry) => entry.at <= target).sort((a, b) => a.at - b.at)[0]
      if (next === undefined) break
      this.pending = this.pending.filter((entry) => entry !== next)
      this.time = next.at
      next.run()
    }
    this.time = target
  }
}

/** How a worker retries what failed: exponential backoff, capped, a bounded number of times. */
export interface RetryPolicy {
  /** Delay before the first retry; each further one doubles it. */
  baseMs: number
  /** The longest delay between two attempts. */
  capMs: number
  /** After this many failed attempts the item is not tried again. */
  maxAttempts: number
}

/** When to try again after `attempts` failed ones, or null when the policy's attempts are spent. */
export function retryAt(policy: RetryPolicy, attempts: number, now: number): number | null {
  if (attempts >= policy.maxAttempts) return null
  return now + Math.min(policy.capMs, policy.baseMs * 2 ** (attempts - 1))
}

/** The pause after a drain failed (the database refused a write): try again, do not spin. */
const FAILED_DRAIN_RETRY_MS = 1000

/**
 * When a worker drains its queue (the webhook inbox, the mail outbox): after the current turn
 * when woken (so after the answer that woke it), when the next item falls due on the clock
 * (`Timers`, so tests move a ManualClock instead of sleeping), every `pollMs` on a queue other
 * instances also fill, and again 1 s after a drain failed. One drain runs at a time.
 */
export class DrainSchedule {
  /** How often to look when nothing here is known to be due; null for a queue only this process fills. */
  pollMs: number | null = null
  private draining: Promise<void> | null = null
  private cancelTimer: (() => void) | null = null
  private timerAt = 0
  private stoppedFlag = true

  constructor(
    private readonly timers: Timers,
    /** Handles what is due until nothing is (or the schedule stops). */
    private readonly drain: () => Promise<void>,
    /** When the next item falls due (epoch ms), or null when none waits. */
    private readonly nextDue: () => Promise<number | null>,
    /** Told when a drain failed; it is retried after a second. */
    private readonly onFailure: (error: unknown) => void,
  ) {}

  get stopped(): boolean {
    return this.stoppedFlag
  }

  /** Starts, beginning with whatever is already due. */
  start(): void {
    this.stoppedFlag = false
    this.wake()
  }

  /** Something new may be due: drain soon. */
  wake(): void {
    if (!this.stoppedFlag) this.schedule(0)
  }

  /** Takes nothing new; resolves when the drain under way has finished. */
  async stop(): Promise<void> {
    this.stoppedFlag = true
    this.cancelTimer?.()
    this.cancelTimer = null
    await this.draining
  }

  /** Resolves when nothing is due and nothing is being drained (for tests). */
  async settled(): Promise<void> {
    for (;;) {
      await this.draining
      await Bun.sleep(1)
      const due = await this.nextDue()
      if (this.draining === null && (due === null || due > this.timers.now())) return
    }
  }

  private schedule(delayMs: number): void {
    const at = this.timers.now() + delayMs
    // A sooner wake-up stands: wake-ups that keep coming must not keep pushing the drain back.
    if (this.cancelTimer !== null && this.timerAt <= at) return
    this.cancelTimer?.()
    this.timerAt = at
    const wait = (run: () => void) => {
      if (delayMs > 0) return this.timers.after(delayMs, run)
      const timer = setTimeout(run, 0)
      return () => clearTimeout(timer)
    }
    this.cancelTimer = wait(() => {
      this.cancelTimer = null
      let failed = false
      this.draining ??= this.drain()
        .catch((error: unknown) => {
          failed = true
          this.onFailure(error)
        })
        .finally(() => {
          this.draining = null
          if (failed && !this.stoppedFlag) this.schedule(FAILED_DRAIN_RETRY_MS)
          else void this.scheduleNext()
        })
    })
  }

  private async scheduleNext(): Promise<void> {
    if (this.stoppedFlag) return
    const due = await this.nextDue().catch(() => null)
    const poll = this.pollMs === null ? null : this.timers.now() + this.pollMs
    const next = due === null ? poll : poll === null ? due : Math.min(due, poll)
    if (next !== null) this.schedule(Math.max(0, next - this.timers.now()))
  }
}
