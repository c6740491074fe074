import type { Database, Statement } from 'bun:sqlite'

/** What the group commit calls just before each COMMIT (see shareReadsPerTurn). */
export interface TurnReads {
  /** Ends the open read transaction, if any: the next read starts a new one. */
  end(): void
}

const READS = ['get', 'all', 'values', 'run', 'iterate'] as const

/**
 * Makes the reads of one turn of the event loop share one read transaction on `reader`. Alone,
 * each statement takes SQLite's read lock and lets it go again (two fcntl calls and an fstat:
 * about 5 µs here, where a point read inside a transaction costs 0.2), so a request that reads
 * one row paid more for the lock than for the row. Now the first read of a turn begins a
 * transaction and it ends when the turn does (setImmediate), or before the writer's next COMMIT,
 * whichever comes first (the group commit calls `end`):
 *
 * - a read never sees a snapshot older than the turn it runs in;
 * - a read after a commit of this process sees it (the snapshot ended before the COMMIT), so an
 *   answered write is read back at once, as before;
 * - no snapshot of ours is open while the writer commits, so its checkpoints and the WAL's
 *   restart wait for no reader of this process.
 *
 * Only for a process whose every write goes through the group commit (the server): a write
 * committed elsewhere in the same turn would be seen only from the next turn on.
 */
export function shareReadsPerTurn(reader: Database): TurnReads {
  const begin = reader.prepare('BEGIN')
  const commit = reader.prepare('COMMIT')
  let open = false
  const end = () => {
    if (!open) return
    open = false
    if (reader.inTransaction) commit.run()
  }
  const ensure = () => {
    // A transaction of the caller's own (reader.transaction) is one snapshot already.
    if (open || reader.inTransaction) return
    begin.run()
    open = true
    setImmediate(end)
  }
  const shared = new WeakSet<Statement>()
  const share = <S extends Statement>(statement: S): S => {
    if (shared.has(statement)) return statement
    shared.add(statement)
    const methods = statement as unknown as Record<string, (...args: unknown[]) => unknown>
    for (const name of READS) {
      const read = methods[name] as (...args: unknown[]) => unknown
      methods[name] = (...args: unknown[]) => {
        ensure()
        return read.apply(statement, args)
      }
    }
    return statement
  }
  const query = reader.query.bind(reader)
  const prepare = reader.prepare.bind(reader)
  reader.query = ((sql: string) => share(query(sql))) as Database['query']
  reader.prepare = ((sql: string, params?: never) =>
    share(prepare(sql, params))) as Database['prepare']
  return { end }
}

/**
 * Makes functions whose reads are one snapshot (a page and its total that agree). Where reads
 * are shared per turn, a synchronous read is one snapshot already: its first statement begins
 * the turn's transaction, or joins it, so it takes no read lock of its own (a list paid one
 * per request in a transaction of its own: 9 % of its CPU). Elsewhere (the CLI) it runs in a
 * transaction of its own.
 */
export function snapshots(
  reader: Database,
  turnReads: TurnReads | null,
): <A extends unknown[], R>(read: (...args: A) => R) => (...args: A) => R {
  return (read) => (turnReads === null ? reader.transaction(read) : read)
}
