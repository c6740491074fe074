export const LOGIN_WINDOW_MS = 15 * 60 * 1000
export const MAX_FAILURES_PER_ADDRESS = 10
export const MAX_FAILURES_PER_IP = 50
/** Keys kept at most; beyond that the oldest are dropped, so a flood cannot grow memory. */
const MAX_KEYS = 100_000

/** A password check that has been let through and must be settled once it is decided. */
export interface LoginAttempt {
  /** The password was wrong (or the account unknown): counts as a failure. */
  failed(): void
  /** The password was right: clears the address's failures. */
  succeeded(): void
  /** Neither (the check itself broke): frees the place without counting anything. */
  abandoned(): void
}

/**
 * Counts failed logins (401 answers only) per email address and per client IP in a sliding
 * 15-minute window. While either is over its limit, every login for it is refused, the right
 * password included, until enough failures have aged out.
 *
 * A password check takes tens of milliseconds, so many can run at once. Each is let through
 * only by `attempt`, which counts the checks still running as if they had failed already: 50
 * concurrent guesses for one address get at most 10 checks, not 50. When the checks in flight
 * are what fills the limit, the wait is a second (their outcome is not known yet).
 */
export class LoginLimiter {
  private readonly failures = new Map<string, number[]>()
  private readonly inFlight = new Map<string, number>()

  constructor(private readonly now: () => number) {}

  /** A place for one password check, or the seconds to wait before one may be tried. */
  attempt(address: string, ip: string): LoginAttempt | { retryAfter: number } {
    const addressKey = `a:${address}`
    const ipKey = `i:${ip}`
    const at = this.now()
    const wait = Math.max(
      this.waitFor(addressKey, MAX_FAILURES_PER_ADDRESS, at),
      this.waitFor(ipKey, MAX_FAILURES_PER_IP, at),
    )
    if (wait > 0) return { retryAfter: Math.ceil(wait / 1000) }
    this.hold(addressKey, 1)
    this.hold(ipKey, 1)
    let settled = false
    const release = (): boolean => {
      if (settled) return false
      settled = true
      this.hold(addressKey, -1)
      this.hold(ipKey, -1)
      return true
    }
    return {
      failed: () => {
        if (!release()) return
        const when = this.now()
        this.push(addressKey, MAX_FAILURES_PER_ADDRESS, when)
        this.push(ipKey, MAX_FAILURES_PER_IP, when)
      },
      succeeded: () => {
        // A successful login clears the address's failures (not the IP's).
        if (release()) this.failures.delete(addressKey)
      },
      abandoned: () => {
        release()
      },
    }
  }

  private hold(key: string, change: number): void {
    const count = (this.inFlight.get(key) ?? 0) + change
    if (count <= 0) this.inFlight.delete(key)
    else this.inFlight.set(key, count)
  }

  /** Milliseconds until a check may run for this key (0: now). */
  private waitFor(key: string, limit: number, at: number): number {
    const recent = this.recent(key, at)
    if (recent.length >= limit) {
      // Allowed again once the failure that makes the count reach the limit ages out.
      const blocking = recent[recent.length - limit] as number
      return blocking + LOGIN_WINDOW_MS - at
    }
    const running = this.inFlight.get(key) ?? 0
    return recent.length + running >= limit ? 1000 : 0
  }

  private push(key: string, limit: number, at: number): void {
    const recent = this.recent(key, at)
    recent.push(at)
    // Only the newest `limit` failures can ever matter.
    if (recent.length > limit) recent.splice(0, recent.length - limit)
    this.failures.delete(key)
    this.failures.set(key, recent)
    if (this.failures.size > MAX_KEYS) {
      const oldest = this.failures.keys().next().value
      if (oldest !== undefined) this.failures.delete(oldest)
    }
  }

  private recent(key: string, at: number): number[] {
    const all = this.failures.get(key) ?? []
    const live = all.filter((time) => time > at - LOGIN_WINDOW_MS)
    if (live.length === 0) this.failures.delete(key)
    return live
  }
}
