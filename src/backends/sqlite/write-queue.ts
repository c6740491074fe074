import type { Database } from 'bun:sqlite'

/** Writes in one group transaction at most; a burst beyond this commits in several. */
export const DEFAULT_MAX_BATCH = 256

export interface WriteQueueOptions {
  maxBatch?: number
  /** Called after every commit with how many writes it held (for metrics). */
  onCommit?: (writes: number) => void
  /** Called when a deferred write fails (it has no caller to tell). */
  onDeferredError?: (error: unknown) => void
  /**
   * Runs before every COMMIT; when it throws, the transaction is rolled back and every write
   * of it fails with that error (the database file vanished, say).
   */
  beforeCommit?: () => void
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown }

/**
 * Rows a write adds that are written at commit, all of the batch's in a few statements (the
 * audit log: an event per change, each statement's fixed cost paid once per commit instead of
 * once per event). They belong to the transaction like any other row: they are inserted just
 * before the COMMIT, and a write rolled back to its savepoint takes its rows out of the buffer.
 */
export interface CommitBuffer {
  /** How many rows wait (a write's savepoint remembers it, to cut back to on a rollback). */
  readonly size: number
  /** Forgets the rows after the first `size` (their write was rolled back). */
  truncate(size: number): void
  /** Inserts every waiting row, inside the open transaction; throws as an INSERT would. */
  flush(): void
}

interface Waiting {
  settle(): void
  fail(error: unknown): void
}

/**
 * Group commit. Writes that arrive within one turn of the event loop share one transaction
 * and so one fsync: the first opens it (BEGIN IMMEDIATE), each runs in its own savepoint so a
 * failing one (a duplicate email, a failed If-Match) is rolled back alone, and the transaction
 * commits at the end of the turn (setImmediate, never a timer, so a lone write waits for
 * nothing but its own commit) or as soon as it holds `maxBatch` writes. Every outcome, success
 * or failure, is delivered only after that commit: no answer leaves before the write it
 * reports is durable, and no refusal is given on the strength of a row that then fails to
 * commit. When the commit fails, every write of the batch fails with its error.
 *
 * `run` takes synchronous work (bun:sqlite is). `runUnit` takes asynchronous work (a unit of
 * work written against the async store interfaces, whose SQLite implementations settle at
 * once): it holds the savepoint until its promise settles, and other writes wait their turn
 * behind it, so it must await nothing but those stores, or it holds every writer up. Work must
 * not open transactions of its own except through `db.transaction()`, which nests as a
 * savepoint. Reads that must not see writes that are not committed yet belong on a separate
 * reader connection.
 */
export class WriteQueue {
  private readonly maxBatch: number
  private waiting: Waiting[] = []
  private open = false
  private flushScheduled = false
  /** An async unit holds the savepoint: other writes and the commit wait for it. */
  private unitInFlight = false
  private commitWhenFree = false
  private readonly blocked: (() => void)[] = []
  private readonly statements: ReturnType<typeof prepare>
  private readonly buffers: CommitBuffer[] = []

  constructor(
    private readonly sqlite: Database,
    private readonly options: WriteQueueOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH
    this.statements = prepare(sqlite)
  }

  /** Rows of this buffer are inserted at every commit, and cut back with a rolled-back write. */
  addBuffer(buffer: CommitBuffer): void {
    this.buffers.push(buffer)
  }

  /** Runs `work` in the current group transaction; settles after that transaction commits. */
  run<T>(work: () => T): Promise<T> {
    if (this.unitInFlight) return this.afterUnit(() => this.run(work))
    return new Promise<T>((resolve, reject) => {
      this.enqueue(this.attempt(work), resolve, reject)
    })
  }

  /**
   * Runs asynchronous `work` in its own savepoint of the current group transaction; settles
   * after that transaction commits. Until `work` settles, other writes and the commit wait.
   */
  runUnit<T>(work: () => Promise<T>): Promise<T> {
    if (this.unitInFlight) return this.afterUnit(() => this.runUnit(work))
    return new Promise<T>((resolve, reject) => {
      this.begin()
      this.statements.savepoint.run()
      const marks = this.marks()
      this.unitInFlight = true
      const end = (outcome: Outcome<T>) => {
        this.unitInFlight = false
        this.enqueue(this.closeSavepoint(outcome, marks), resolve, reject)
        while (!this.unitInFlight && this.blocked.length > 0) this.blocked.shift()?.()
        if (!this.unitInFlight && this.commitWhenFree) {
          this.commitWhenFree = false
          this.flush()
        }
      }
      let started: Promise<T>
      try {
        started = work()
      } catch (error) {
        started = Promise.reject(error)
      }
      started.then(
        (value) => end({ ok: true, value }),
        (error: unknown) => end({ ok: false, error }),
      )
    })
  }

  /**
   * A write nobody waits for (a session's renewal, an API key's last use): it joins the
   * current group transaction; a failure is reported to `onDeferredError` and goes no further.
   */
  defer(work: () => void): void {
    this.run(work).catch((error) => this.options.onDeferredError?.(error))
  }

  /** Commits the open transaction now (shutdown, tests). */
  flush(): void {
    if (this.unitInFlight) {
      this.commitWhenFree = true
      return
    }
    if (!this.open) return
    const batch = this.waiting
    this.waiting = []
    this.open = false
    try {
      for (const buffer of this.buffers) buffer.flush()
      this.options.beforeCommit?.()
      this.statements.commit.run()
    } catch (error) {
      this.abandon()
      for (const write of batch) write.fail(error)
      return
    }
    for (const write of batch) write.settle()
    this.options.onCommit?.(batch.length)
  }

  private enqueue<T>(
    outcome: Outcome<T>,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
  ): void {
    if (!outcome.ok && !this.open) {
      // The failure took the whole transaction with it: there is no commit to wait for.
      reject(outcome.error)
      return
    }
    this.waiting.push({
      settle: outcome.ok ? () => resolve(outcome.value) : () => reject(outcome.error),
      fail: reject,
    })
    if (this.waiting.length >= this.maxBatch) this.flush()
  }

  private afterUnit<T>(start: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.blocked.push(() => {
        start().then(resolve, reject)
      })
    })
  }

  private attempt<T>(work: () => T): Outcome<T> {
    this.begin()
    this.statements.savepoint.run()
    const marks = this.marks()
    let outcome: Outcome<T>
    try {
      outcome = { ok: true, value: work() }
    } catch (error) {
      outcome = { ok: false, error }
    }
    return this.closeSavepoint(outcome, marks)
  }

  /** Where each buffer stood when a write's savepoint opened. */
  private marks(): number[] {
    return this.buffers.map((buffer) => buffer.size)
  }

  /**
   * Releases the write's savepoint, or rolls back to it when the write failed (and cuts the
   * buffers back to `marks`, taking out the rows the write added).
   */
  private closeSavepoint<T>(result: Outcome<T>, marks: readonly number[]): Outcome<T> {
    const { release, rollbackTo } = this.statements
    let outcome = result
    if (outcome.ok) {
      try {
        release.run()
        return outcome
      } catch (error) {
        outcome = { ok: false, error }
      }
    }
    for (const [index, buffer] of this.buffers.entries()) buffer.truncate(marks[index] ?? 0)
    try {
      rollbackTo.run()
      release.run()
    } catch {
      // Some errors (SQLITE_FULL, SQLITE_IOERR) roll the whole transaction back: every
      // write of the batch is lost and must be reported so.
    }
    if (!this.sqlite.inTransaction) this.failBatch(outcome.error)
    return outcome
  }

  private begin(): void {
    if (this.open) return
    this.statements.begin.run()
    this.open = true
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => {
      this.flushScheduled = false
      this.flush()
    })
  }

  private failBatch(error: unknown): void {
    const batch = this.waiting
    this.waiting = []
    this.open = false
    this.abandon()
    for (const write of batch) write.fail(error)
  }

  private abandon(): void {
    for (const buffer of this.buffers) buffer.truncate(0)
    try {
      if (this.sqlite.inTransaction) this.statements.rollback.run()
    } catch {
      // Nothing more can be done here; the connection reports the state on its next use.
    }
  }
}

function prepare(sqlite: Database) {
  return {
    begin: sqlite.prepare('BEGIN IMMEDIATE'),
    commit: sqlite.prepare('COMMIT'),
    rollback: sqlite.prepare('ROLLBACK'),
    savepoint: sqlite.prepare('SAVEPOINT roster_write'),
    release: sqlite.prepare('RELEASE roster_write'),
    rollbackTo: sqlite.prepare('ROLLBACK TO roster_write'),
  }
}
