import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openReader } from '../../src/backends/sqlite/connection'
import { shareReadsPerTurn, snapshots } from '../../src/backends/sqlite/turn-reads'
import { WriteQueue } from '../../src/backends/sqlite/write-queue'
import { tempDir } from '../helpers/app'

/**
 * A real database file, a reader sharing its reads per turn (as the server's does; not when
 * `sharedPerTurn` is false, as the CLI's), and the group commit ending them.
 */
function fixture(sharedPerTurn = true) {
  const dir = tempDir('roster-turn-')
  const path = join(dir.path, 't.db')
  const writer = new Database(path, { create: true, strict: true })
  writer.run('PRAGMA journal_mode = WAL')
  writer.run('CREATE TABLE t (x INTEGER NOT NULL)')
  const reader = openReader(path)
  const turnReads = sharedPerTurn ? shareReadsPerTurn(reader) : null
  const snapshot = snapshots(reader, turnReads)
  /** Whether the reader held a snapshot at each COMMIT. */
  const heldAtCommit: boolean[] = []
  const queue = new WriteQueue(writer, {
    beforeCommit: () => {
      turnReads?.end()
      heldAtCommit.push(reader.inTransaction)
    },
  })
  const insert = writer.prepare('INSERT INTO t (x) VALUES (?)')
  const count = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM t')
  return {
    path,
    writer,
    reader,
    snapshot,
    heldAtCommit,
    add: (x: number) => queue.run(() => insert.run(x)),
    count: () => count.get()?.n,
    [Symbol.dispose]() {
      turnReads?.end()
      reader.close()
      writer.close()
      dir[Symbol.dispose]()
    },
  }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('reads shared per turn of the event loop', () => {
  test('reads of one turn share one transaction, which ends with the turn', async () => {
    using f = fixture()
    expect(f.reader.inTransaction).toBe(false)
    expect(f.count()).toBe(0)
    expect(f.reader.inTransaction).toBe(true)
    await nextTurn()
    expect(f.reader.inTransaction).toBe(false)
  })

  test('a write answered by the group commit is read back at once, in the same turn', async () => {
    using f = fixture()
    expect(f.count()).toBe(0)
    await f.add(1)
    expect(f.count()).toBe(1)
    await f.add(2)
    expect(f.count()).toBe(2)
  })

  test('no read of this process holds a snapshot while the writer commits', async () => {
    using f = fixture()
    expect(f.count()).toBe(0)
    const written = f.add(3)
    expect(f.count()).toBe(0) // not committed yet: the turn's snapshot does not see it
    await written
    expect(f.heldAtCommit).toEqual([false])
    expect(f.count()).toBe(1)
  })

  test('another connection’s commit is seen from the next turn on, never later', async () => {
    using f = fixture()
    const other = new Database(f.path, { strict: true })
    expect(f.count()).toBe(0)
    other.run('INSERT INTO t (x) VALUES (7)')
    // The turn's snapshot: as of its first read.
    expect(f.count()).toBe(0)
    await nextTurn()
    expect(f.count()).toBe(1)
    other.close()
  })

  test('a transaction of the reader’s own nests in the turn’s snapshot', async () => {
    using f = fixture()
    expect(f.count()).toBe(0)
    const both = f.reader.transaction(() => [f.count(), f.count()])
    expect(both()).toEqual([0, 0])
    await nextTurn()
    // And begun alone, it is the snapshot.
    expect(both()).toEqual([0, 0])
    expect(f.reader.inTransaction).toBe(false)
  })

  test('a snapshot joins the turn’s transaction: two in one turn see one state, and hold it no longer', async () => {
    using f = fixture()
    const other = new Database(f.path, { strict: true })
    const read = f.snapshot(() => [f.count(), f.count()])
    expect(f.reader.inTransaction).toBe(false)
    expect(read()).toEqual([0, 0])
    expect(f.reader.inTransaction).toBe(true) // the turn's, not one of its own
    other.run('INSERT INTO t (x) VALUES (7)')
    expect(read()).toEqual([0, 0])
    await nextTurn()
    expect(f.reader.inTransaction).toBe(false)
    expect(read()).toEqual([1, 1])
    // A write of this process ends the turn's snapshot before its COMMIT, and is read back.
    await f.add(8)
    expect(read()).toEqual([2, 2])
    other.close()
  })
})

describe('snapshots where reads are not shared (the CLI)', () => {
  test('a snapshot is a transaction of its own, begun before its first read and ended after it', () => {
    using f = fixture(false)
    const seen: unknown[] = []
    const read = f.snapshot(() => {
      seen.push(f.reader.inTransaction, f.count())
      // Another connection's commit inside the snapshot is not seen by its later reads.
      f.writer.run('INSERT INTO t (x) VALUES (1)')
      seen.push(f.count())
    })
    read()
    expect(seen).toEqual([true, 0, 0])
    expect(f.reader.inTransaction).toBe(false)
    expect(f.count()).toBe(1)
  })
})
