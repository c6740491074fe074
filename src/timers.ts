/**
 * Waiting on a clock: the webhook worker's retries wait on this rather than on setTimeout
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
