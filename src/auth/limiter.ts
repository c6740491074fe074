export const LOGIN_WINDOW_MS = 15 * 60 * 1000
export const MAX_FAILURES_PER_ADDRESS = 10
export const MAX_FAILURES_PER_IP = 50
/**
 * How long a password check let through counts as in flight if its outcome never arrives (its
 * process died): long enough for a check queued behind others for an argon2 slot.
 */
export const CHECK_LEASE_MS = 60_000
/** Keys kept at most in memory; beyond that the oldest are dropped, so a flood cannot grow it. */
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

/** When a reservation is decided: now, the window's start, and when its lease would lapse. */
export interface ReservationWindow {
  at: number
  since: number
  leaseUntil: number
}

/** What a key's log holds in the window: its failures' times (oldest first) and checks in flight. */
export interface KeyHistory {
  failures: number[]
  inFlight: number
}

/**
 * Failed sign-ins and the checks in flight, by key (`a:` an address, `i:` an IP). `reserve` is
 * atomic per key: while `decide` runs for some keys, no other reservation for them is decided,
 * so N processes sharing the log together let through at most what one would. A shared
 * database keeps it in rows; one process alone keeps it in memory.
 */
export interface LoginFailureLog {
  /**
   * Reads each key's failures after `window.since` and its checks in flight at `window.at`;
   * when `decide` answers 0, records a check in flight for every key (until `leaseUntil`, in
   * case its outcome never comes) and returns its id; else the wait `decide` answered (ms).
   */
  reserve(
    keys: readonly string[],
    window: ReservationWindow,
    decide: (history: KeyHistory[]) => number,
  ): Promise<{ reservation: string } | { waitMs: number }>
  /** The check failed: its in-flight entries become failures at `at`. */
  fail(reservation: string, at: number): Promise<void>
  /** The check succeeded: its entries go, and so do `clearKey`'s failures. */
  succeed(reservation: string, clearKey: string): Promise<void>
  /** The check broke: its entries go, nothing is counted. */
  abandon(reservation: string): Promise<void>
}

/**
 * Counts failed logins (401 answers only) per email address and per client IP in a sliding
 * 15-minute window. While either is over its limit, every login for it is refused, the right
 * password included, until enough failures have aged out.
 *
 * A password check takes tens of milliseconds, so many can run at once, on one instance or
 * several. Each is let through only by `attempt`, which counts the checks in flight as if they
 * had failed already: 50 concurrent guesses for one address get at most 10 checks, not 50, and
 * on a shared database that holds across every instance together. When the checks in flight
 * are what fills the limit, the wait is a second (their outcome is not known yet).
 */
export class LoginLimiter {
  constructor(
    private readonly log: LoginFailureLog,
    private readonly now: () => number,
  ) {}

  /** A place for one password check, or the seconds to wait before one may be tried. */
  async attempt(address: string, ip: string): Promise<LoginAttempt | { retryAfter: number }> {
    const keys = [`a:${address}`, `i:${ip}`] as const
    const limits = [MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_IP]
    const at = this.now()
    const window = { at, since: at - LOGIN_WINDOW_MS, leaseUntil: at + CHECK_LEASE_MS }
    const outcome = await this.log.reserve(keys, window, (history) =>
      Math.max(...history.map((key, i) => waitFor(key, limits[i] ?? 0, at))),
    )
    if ('waitMs' in outcome) return { retryAfter: Math.max(1, Math.ceil(outcome.waitMs / 1000)) }
    const { reservation } = outcome
    let settled = false
    // The place is freed only once the outcome is stored: never a moment when neither counts.
    const settle = async (store: () => Promise<void>) => {
      if (settled) return
      settled = true
      await store()
    }
    return {
      failed: () => settle(() => this.log.fail(reservation, this.now())),
      // A successful login clears the address's failures (not the IP's).
      succeeded: () => settle(() => this.log.succeed(reservation, keys[0])),
      abandoned: () => {
        void settle(() => this.log.abandon(reservation)).catch(() => {})
      },
    }
  }
}

/** Milliseconds until a check may run for a key (0: now). */
export function waitFor(history: KeyHistory, limit: number, at: number): number {
  const { failures, inFlight } = history
  if (failures.length >= limit) {
    // Allowed again once the failure that makes the count reach the limit ages out.
    const blocking = failures[failures.length - limit] as number
    return Math.max(1, blocking + LOGIN_WINDOW_MS - at)
  }
  return failures.length + inFlight >= limit ? 1000 : 0
}

interface MemoryKey {
  failures: number[]
  /** Reservations in flight and when each lapses. */
  inFlight: Map<string, number>
}

/**
 * The log of a single server (the SQLite default): in memory, bounded, forgotten on a restart
 * (15 minutes of history at most is what it holds anyway). JavaScript runs one reservation at a
 * time, so each is atomic by itself, decided in the order the checks arrived.
 */
export class MemoryLoginFailures implements LoginFailureLog {
  private readonly keys = new Map<string, MemoryKey>()
  private readonly reservations = new Map<string, readonly string[]>()
  private nextId = 0

  reserve(
    keys: readonly string[],
    window: ReservationWindow,
    decide: (history: KeyHistory[]) => number,
  ): Promise<{ reservation: string } | { waitMs: number }> {
    const entries = keys.map((key) => this.live(key, window.since))
    const waitMs = decide(
      entries.map((entry) => ({
        failures: entry.failures,
        inFlight: [...entry.inFlight.values()].filter((until) => until > window.at).length,
      })),
    )
    if (waitMs > 0) return Promise.resolve({ waitMs })
    const reservation = String(++this.nextId)
    for (const entry of entries) entry.inFlight.set(reservation, window.leaseUntil)
    this.reservations.set(reservation, keys)
    return Promise.resolve({ reservation })
  }

  fail(reservation: string, at: number): Promise<void> {
    for (const key of this.release(reservation)) {
      const entry = this.live(key, at - LOGIN_WINDOW_MS)
      entry.failures.push(at)
      // Only the newest failures up to the largest limit can ever matter.
      if (entry.failures.length > MAX_FAILURES_PER_IP) {
        entry.failures.splice(0, entry.failures.length - MAX_FAILURES_PER_IP)
      }
    }
    return Promise.resolve()
  }

  succeed(reservation: string, clearKey: string): Promise<void> {
    this.release(reservation)
    this.keys.get(clearKey)?.failures.splice(0)
    return Promise.resolve()
  }

  abandon(reservation: string): Promise<void> {
    this.release(reservation)
    return Promise.resolve()
  }

  private release(reservation: string): readonly string[] {
    const keys = this.reservations.get(reservation) ?? []
    this.reservations.delete(reservation)
    for (const key of keys) this.keys.get(key)?.inFlight.delete(reservation)
    return keys
  }

  /** The key's entry with what has aged out dropped; most recently used keys last. */
  private live(key: string, since: number): MemoryKey {
    const entry = this.keys.get(key) ?? { failures: [], inFlight: new Map() }
    entry.failures = entry.failures.filter((time) => time > since)
    this.keys.delete(key)
    this.keys.set(key, entry)
    if (this.keys.size > MAX_KEYS) {
      const oldest = this.keys.keys().next().value
      if (oldest !== undefined && this.keys.get(oldest)?.inFlight.size === 0) {
        this.keys.delete(oldest)
      }
    }
    return entry
  }
}
