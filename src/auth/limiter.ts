export const LOGIN_WINDOW_MS = 15 * 60 * 1000
export const MAX_FAILURES_PER_ADDRESS = 10
export const MAX_FAILURES_PER_IP = 50
/** Keys kept at most; beyond that the oldest are dropped, so a flood cannot grow memory. */
const MAX_KEYS = 100_000

/**
 * Counts failed logins (401 answers only) per email address and per client IP in a sliding
 * 15-minute window. While either is over its limit, every login for it is refused, the right
 * password included, until enough failures have aged out.
 */
export class LoginLimiter {
  private readonly failures = new Map<string, number[]>()

  constructor(private readonly now: () => number) {}

  /** Seconds until a login for this address and IP may be tried again, or 0 if it may now. */
  retryAfter(address: string, ip: string): number {
    const at = this.now()
    const wait = Math.max(
      this.waitFor(`a:${address}`, MAX_FAILURES_PER_ADDRESS, at),
      this.waitFor(`i:${ip}`, MAX_FAILURES_PER_IP, at),
    )
    return wait === 0 ? 0 : Math.ceil(wait / 1000)
  }

  recordFailure(address: string, ip: string): void {
    const at = this.now()
    this.push(`a:${address}`, MAX_FAILURES_PER_ADDRESS, at)
    this.push(`i:${ip}`, MAX_FAILURES_PER_IP, at)
  }

  /** A successful login clears the address's failures (not the IP's). */
  recordSuccess(address: string): void {
    this.failures.delete(`a:${address}`)
  }

  private waitFor(key: string, limit: number, at: number): number {
    const recent = this.recent(key, at)
    if (recent.length < limit) return 0
    // Allowed again once the failure that makes the count reach the limit ages out.
    const blocking = recent[recent.length - limit] as number
    return blocking + LOGIN_WINDOW_MS - at
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
