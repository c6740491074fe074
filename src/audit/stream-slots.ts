/**
 * How many live feed streams (GET /events) this instance holds open: at most `perHolder` for
 * one holder (an API key, or a user with all its sessions and tokens: a user can sign in again
 * for a new session, so a cap per session would hold nobody) and `total` in all (CONTRACT
 * section 17). Each open stream costs a connection, a buffer and a place in the hub's fan-out;
 * without the caps one `audit:read` key held 2,000 of them.
 */
export interface StreamCaps {
  perHolder: number
  total: number
}

/** A stream's place, given back when the stream ends (more than once is harmless). */
export interface StreamSlot {
  release(): void
}

/** Why no slot was given, and when one is sure to be free (in whole seconds, at least 1). */
export interface StreamRefusal {
  over: 'holder' | 'total'
  retryAfterS: number
}

interface Held {
  readonly holder: string
  readonly openedAt: number
}

export class StreamSlots {
  /** Every open stream, oldest first (a Set keeps insertion order). */
  private readonly open = new Set<Held>()
  private readonly byHolder = new Map<string, Set<Held>>()

  constructor(
    private readonly caps: StreamCaps,
    /** How long a stream lasts at most: its slot is free by then. */
    private readonly lifetimeMs: number,
    private readonly now: () => number,
  ) {}

  /** Open streams, in all or of one holder (for tests and /metrics). */
  count(holder?: string): number {
    return holder === undefined ? this.open.size : (this.byHolder.get(holder)?.size ?? 0)
  }

  /** A slot for one more stream of `holder`, or why not and when to try again. */
  take(holder: string): StreamSlot | StreamRefusal {
    const own = this.byHolder.get(holder) ?? new Set<Held>()
    if (own.size >= this.caps.perHolder) return this.refusal('holder', own)
    if (this.open.size >= this.caps.total) return this.refusal('total', this.open)
    const held: Held = { holder, openedAt: this.now() }
    own.add(held)
    this.byHolder.set(holder, own)
    this.open.add(held)
    return { release: () => this.release(held) }
  }

  private release(held: Held): void {
    if (!this.open.delete(held)) return
    const own = this.byHolder.get(held.holder)
    own?.delete(held)
    if (own?.size === 0) this.byHolder.delete(held.holder)
  }

  /** The oldest of `streams` ends at its lifetime at the latest: a slot is free by then. */
  private refusal(over: StreamRefusal['over'], streams: Set<Held>): StreamRefusal {
    const oldest = streams.values().next().value as Held | undefined
    const endsInMs = oldest === undefined ? 0 : oldest.openedAt + this.lifetimeMs - this.now()
    return { over, retryAfterS: Math.max(1, Math.ceil(endsInMs / 1000)) }
  }
}
