export const LOGIN_WINDOW_MS = 15 * 60 * 1000
export const MAX_FAILURES_PER_ADDRESS = 10
export const MAX_FAILURES_PER_IP = 50
/** Keys kept at most; beyond that the oldest are dropped, so a flood cannot grow memory. */
const MAX_KEYS = 100_000

/** A password check that has been let through and must be settled once it is decided. */
export interface LoginAttempt {
  /** The password was wrong (or the account unknown): counts as a failure once stored. */
  failed(): Promise<void>
  /** The password was right: clears the address's failures. */
  succeeded(): Promise<void>
  /** Neither (the check itself broke): frees the place without counting anything. */
  abandoned(): void
}

/**
 * Failed sign-ins by key (`a:` an address, `i:` an IP). Written for instances that share a
 * database: a failure is a row, so failures on every instance count against one limit.
 */
export interface LoginFailureLog {
  /** The times of each key's failures after `since`, oldest first (the newest 50 at most). */
  recent(keys: readonly string[], since: number): Promise<number[][]>
  record(keys: readonly string[], at: number): Promise<void>
  clear(key: string): Promise<void>
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
  /** Checks running in this process, per key: their tickets, in the order they arrived. */
  private readonly inFlight = new Map<string, Set<number>>()
  private nextTicket = 0

  constructor(
    private readonly failures: LoginFailureLog,
    private readonly now: () => number,
  ) {}

  /** A place for one password check, or the seconds to wait before one may be tried. */
  async attempt(address: string, ip: string): Promise<LoginAttempt | { retryAfter: number }> {
    const keys = [`a:${address}`, `i:${ip}`] as const
    const limits = [MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_IP]
    // Taken before anything is awaited, so that checks that start together are decided in the
    // order they came: each counts the earlier ones still running (not those refused meanwhile).
    const ticket = this.nextTicket++
    for (const key of keys) this.hold(key, ticket)
    let settled = false
    const release = (): void => {
      if (settled) return
      settled = true
      for (const key of keys) this.drop(key, ticket)
    }
    let recent: number[][]
    try {
      recent = await this.failures.recent(keys, this.now() - LOGIN_WINDOW_MS)
    } catch (error) {
      release()
      throw error
    }
    const at = this.now()
    const wait = Math.max(
      ...keys.map((key, i) =>
        waitFor(recent[i] ?? [], this.ahead(key, ticket), limits[i] ?? 0, at),
      ),
    )
    if (wait > 0) {
      release()
      return { retryAfter: Math.ceil(wait / 1000) }
    }
    // The place is freed only once the outcome is stored: never a moment when neither counts.
    const settle = async (store: () => Promise<void>) => {
      if (settled) return
      try {
        await store()
      } finally {
        release()
      }
    }
    return {
      failed: () => settle(() => this.failures.record(keys, this.now())),
      // A successful login clears the address's failures (not the IP's).
      succeeded: () => settle(() => this.failures.clear(keys[0])),
      abandoned: release,
    }
  }

  private hold(key: string, ticket: number): void {
    const tickets = this.inFlight.get(key) ?? new Set<number>()
    tickets.add(ticket)
    this.inFlight.set(key, tickets)
  }

  private drop(key: string, ticket: number): void {
    const tickets = this.inFlight.get(key)
    tickets?.delete(ticket)
    if (tickets?.size === 0) this.inFlight.delete(key)
  }

  /** How many checks for the key that came before this one are still running. */
  private ahead(key: string, ticket: number): number {
    let count = 0
    for (const other of this.inFlight.get(key) ?? []) if (other < ticket) count += 1
    return count
  }
}

/** Milliseconds until a check may run for a key (0: now). */
function waitFor(recent: readonly number[], ahead: number, limit: number, at: number): number {
  if (recent.length >= limit) {
    // Allowed again once the failure that makes the count reach the limit ages out.
    const blocking = recent[recent.length - limit] as number
    return blocking + LOGIN_WINDOW_MS - at
  }
  return recent.length + ahead >= limit ? 1000 : 0
}

/**
 * The failure log of a single server (the SQLite default): in memory, bounded, forgotten on a
 * restart (15 minutes of history at most is what it holds anyway).
 */
export class MemoryLoginFailures implements LoginFailureLog {
  private readonly failures = new Map<string, number[]>()

  recent(keys: readonly string[], since: number): Promise<number[][]> {
    return Promise.resolve(keys.map((key) => this.live(key, since)))
  }

  record(keys: readonly string[], at: number): Promise<void> {
    for (const key of keys) {
      const times = this.live(key, at - LOGIN_WINDOW_MS)
      times.push(at)
      // Only the newest failures up to the largest limit can ever matter.
      if (times.length > MAX_FAILURES_PER_IP) times.splice(0, times.length - MAX_FAILURES_PER_IP)
      this.failures.delete(key)
      this.failures.set(key, times)
      if (this.failures.size > MAX_KEYS) {
        const oldest = this.failures.keys().next().value
        if (oldest !== undefined) this.failures.delete(oldest)
      }
    }
    return Promise.resolve()
  }

  clear(key: string): Promise<void> {
    this.failures.delete(key)
    return Promise.resolve()
  }

  private live(key: string, since: number): number[] {
    const live = (this.failures.get(key) ?? []).filter((time) => time > since)
    if (live.length === 0) this.failures.delete(key)
    return live
  }
}
