import type { Store } from './connection'

/** Users indexed per write transaction: ~20 ms of the writer, so writes never wait long. */
const BATCH = 500
/**
 * Users a search may read directly before the indexer works even while writes are busy (a
 * search then reads at most this many keys besides the index: ~15 ms on this machine).
 */
export const PENDING_LIMIT = 100_000
/** How often the indexer looks, and how long writes must have paused before it works. */
const TICK_MS = 250

/**
 * Keeps `users_search` (migration 0017) and `users_name_order` (sort=name, migration 0018) in
 * step with the users, off the write path: a user's
 * trigrams cost ~40 µs to index, more than the rest of its POST, so the server indexes them in
 * batches when writes pause (or at once past PENDING_LIMIT), in the write queue like any write.
 * Until then a search reads the users the index does not cover directly (users/search in
 * backends/sqlite/users.ts), so its answer is always exact; only its cost waits for the index.
 * The mark also keeps the number of users below it, so the total counts only the users above.
 */
export class SearchIndexer {
  private readonly statements
  private lastWrite = 0
  private timer: ReturnType<typeof setInterval> | null = null
  private running = false

  constructor(
    private readonly store: Store,
    private readonly clock: () => number,
  ) {
    const writer = store.db.$client
    const reader = store.reader
    this.statements = {
      stale: writer.query<{ id: number; indexed_key: string }, [number]>(
        'SELECT id, indexed_key FROM users_search_stale ORDER BY id LIMIT ?',
      ),
      forget: writer.query<unknown, [number, string]>(
        "INSERT INTO users_search (users_search, rowid, search_key) VALUES ('delete', ?, ?)",
      ),
      reindex: writer.query<unknown, [number]>(
        'INSERT INTO users_search (rowid, search_key) SELECT id, search_key FROM users WHERE id = ?',
      ),
      fresh: writer.query<unknown, [number]>('DELETE FROM users_search_stale WHERE id = ?'),
      // sort=name's order (migration 0018) follows the same mark and the same stale entries.
      unorder: writer.query<unknown, [string, number]>(
        'DELETE FROM users_name_order WHERE name_key = ? AND user_id = ?',
      ),
      reorder: writer.query<unknown, [number]>(
        'INSERT INTO users_name_order (name_key, user_id) SELECT search_key, id FROM users WHERE id = ?',
      ),
      order: writer.query<unknown, [number, number]>(
        'INSERT INTO users_name_order (name_key, user_id) SELECT search_key, id FROM users WHERE id > ? AND id <= ?',
      ),
      indexedThrough: writer.query<{ at: number }, []>(
        'SELECT through AS at FROM users_indexed WHERE id = 1',
      ),
      lastOfBatch: writer.query<{ last: number | null }, [number, number]>(
        'SELECT max(id) AS last FROM (SELECT id FROM users WHERE id > ? ORDER BY id LIMIT ?)',
      ),
      index: writer.query<unknown, [number, number]>(
        'INSERT INTO users_search (rowid, search_key) SELECT id, search_key FROM users WHERE id > ? AND id <= ?',
      ),
      // The mark moves with the number of users below it (migration 0017).
      advance: writer.query<unknown, [number, number]>(
        `UPDATE users_indexed SET through = ?2,
           users = users + (SELECT count(*) FROM users WHERE id > ?1 AND id <= ?2)
         WHERE id = 1`,
      ),
      // An upper bound (ids deleted before indexing count too): cheap at any size.
      pending: reader.query<{ n: number }, []>(
        `SELECT coalesce((SELECT max(id) FROM users), 0)
           - (SELECT through FROM users_indexed WHERE id = 1)
           + (SELECT count(*) FROM users_search_stale) AS n`,
      ),
    }
  }

  /** Users waiting for the index (an upper bound). */
  pending(): number {
    return Math.max(0, this.statements.pending.get()?.n ?? 0)
  }

  /** A write committed: the indexer waits for a pause. */
  wrote(): void {
    this.lastWrite = this.clock()
  }

  /**
   * Indexes up to `limit` users: stale entries first, then the users above the mark. Runs in
   * the writer's transaction (the write queue's); answers how many it handled.
   */
  step(limit: number): number {
    const s = this.statements
    const stale = s.stale.all(limit)
    for (const { id, indexed_key } of stale) {
      s.forget.run(id, indexed_key)
      s.reindex.run(id)
      s.unorder.run(indexed_key, id)
      s.reorder.run(id)
      s.fresh.run(id)
    }
    const room = limit - stale.length
    if (room <= 0) return stale.length
    const from = s.indexedThrough.get()?.at ?? 0
    const last = s.lastOfBatch.get(from, room)?.last ?? null
    if (last === null) return stale.length
    s.index.run(from, last)
    s.order.run(from, last)
    s.advance.run(from, last)
    return stale.length + (last - from)
  }

  /** Indexes every waiting user now, a batch per transaction (tests, and after a migration). */
  async catchUp(): Promise<void> {
    while ((await this.store.writes.run(() => this.step(BATCH))) > 0) {}
  }

  /** Looks every TICK_MS and indexes a batch when writes paused or too many wait. */
  start(): void {
    this.timer ??= setInterval(() => void this.tick(), TICK_MS)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  /** While writes pause (or too many users wait), a batch after another, each yielding to I/O. */
  private async tick(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      for (;;) {
        const idle = this.clock() - this.lastWrite >= TICK_MS
        const pending = this.pending()
        if (pending === 0 || (!idle && pending < PENDING_LIMIT)) return
        // Its own commit counts as a write: keep the pause it found.
        const pause = this.lastWrite
        await this.store.writes.run(() => this.step(BATCH))
        this.lastWrite = pause
        // Requests that arrived meanwhile go first.
        await new Promise((resolve) => setImmediate(resolve))
        if (!idle) return
      }
    } catch {
      // Nothing is lost: the users stay waiting, and searches read them directly meanwhile.
    } finally {
      this.running = false
    }
  }
}
