import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openReader } from '../../src/backends/sqlite/connection'
import { WriteQueue } from '../../src/backends/sqlite/write-queue'
import { tempDir } from '../helpers/app'

/** A real database file with a writer, a reader and a queue that records each commit's size. */
function fixture(maxBatch?: number) {
  const dir = tempDir('roster-wq-')
  const path = join(dir.path, 'q.db')
  const writer = new Database(path, { create: true, strict: true })
  writer.run('PRAGMA journal_mode = WAL')
  writer.run('PRAGMA foreign_keys = ON')
  writer.run('CREATE TABLE t (x TEXT NOT NULL UNIQUE)')
  writer.run('CREATE TABLE parent (id INTEGER PRIMARY KEY)')
  writer.run(
    'CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)',
  )
  const reader = openReader(path)
  const commits: number[] = []
  const queue = new WriteQueue(writer, { maxBatch, onCommit: (writes) => commits.push(writes) })
  const insert = writer.prepare('INSERT INTO t (x) VALUES (?)')
  const committed = () => reader.query<{ x: string }, []>('SELECT x FROM t ORDER BY x').all()
  return {
    writer,
    queue,
    commits,
    committed,
    add: (x: string) => queue.run(() => insert.run(x).changes),
    /** An async unit that inserts each value after a resolved await, as the async stores do. */
    addAll: (xs: string[]) =>
      queue.runUnit(async () => {
        for (const x of xs) await Promise.resolve(insert.run(x))
        return xs.length
      }),
    [Symbol.dispose]() {
      reader.close()
      writer.close()
      dir[Symbol.dispose]()
    },
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('the group commit', () => {
  test('writes of one turn share one transaction, and none settles before it commits', async () => {
    using f = fixture()
    const settledEarly: string[] = []
    const writes = ['a', 'b', 'c', 'd'].map((x) => {
      const write = f.add(x)
      void write.then(() => settledEarly.push(x))
      return write
    })
    // Every write has run; nothing is committed, so nothing has settled and the reader sees nothing.
    await Promise.resolve()
    expect(settledEarly).toEqual([])
    expect(f.committed()).toEqual([])
    expect(await Promise.all(writes)).toEqual([1, 1, 1, 1])
    expect(f.commits).toEqual([4])
    expect(f.committed().map((row) => row.x)).toEqual(['a', 'b', 'c', 'd'])
  })

  test('when a write settles, its row is durable and visible to another connection', async () => {
    using f = fixture()
    let seenAtSettle: string[] = []
    await f.add('a').then(() => {
      seenAtSettle = f.committed().map((row) => row.x)
    })
    expect(seenAtSettle).toEqual(['a'])
  })

  test('a failing write fails alone, after the commit; the others are kept', async () => {
    using f = fixture()
    await f.add('taken')
    const outcomes = await Promise.allSettled([f.add('a'), f.add('taken'), f.add('b')])
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ])
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain('UNIQUE')
    expect(f.commits).toEqual([1, 3])
    expect(f.committed().map((row) => row.x)).toEqual(['a', 'b', 'taken'])
  })

  test('a lone write waits for the end of its turn, not for a timer', async () => {
    using f = fixture()
    let settled = false
    const write = f.add('alone').then(() => {
      settled = true
    })
    await turn()
    await Promise.resolve()
    expect(settled).toBe(true)
    await write
  })

  test('a batch has a size cap: a burst beyond it commits in several transactions', async () => {
    using f = fixture(3)
    await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map(f.add))
    expect(f.commits).toEqual([3, 3, 1])
    expect(f.committed()).toHaveLength(7)
  })

  test('a failed commit fails every write of the batch, and leaves nothing behind', async () => {
    using f = fixture()
    // A deferred foreign key is checked at COMMIT: the whole transaction is refused.
    const child = f.writer.prepare('INSERT INTO child (parent_id) VALUES (?)')
    const outcomes = await Promise.allSettled([f.add('a'), f.queue.run(() => child.run(42))])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toContain('FOREIGN KEY')
    expect(f.committed()).toEqual([])
    expect(f.writer.inTransaction).toBe(false)
    // The queue goes on working.
    await f.add('b')
    expect(f.committed().map((row) => row.x)).toEqual(['b'])
  })

  test('an error that ends the whole transaction fails the writes before it too', async () => {
    using f = fixture()
    const first = f.add('a')
    const breaking = f.queue.run(() => {
      f.writer.run('ROLLBACK')
      throw new Error('the transaction is gone')
    })
    const outcomes = await Promise.allSettled([first, breaking])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect(f.committed()).toEqual([])
    await f.add('b')
    expect(f.committed().map((row) => row.x)).toEqual(['b'])
  })

  test('work may nest transactions: they become savepoints of its own', async () => {
    using f = fixture()
    const insert = f.writer.prepare('INSERT INTO t (x) VALUES (?)')
    const nested = f.writer.transaction((x: string) => insert.run(x))
    await f.queue.run(() => {
      nested('outer')
      try {
        f.writer.transaction(() => {
          insert.run('inner')
          throw new Error('undo inner')
        })()
      } catch {}
    })
    expect(f.committed().map((row) => row.x)).toEqual(['outer'])
  })

  test('deferred writes join the batch; their failures go to onDeferredError', async () => {
    using f = fixture()
    const failures: unknown[] = []
    const queue = new WriteQueue(f.writer, { onDeferredError: (error) => failures.push(error) })
    const insert = f.writer.prepare('INSERT INTO t (x) VALUES (?)')
    queue.defer(() => insert.run('a'))
    queue.defer(() => insert.run('a'))
    await queue.run(() => insert.run('b'))
    expect(failures).toHaveLength(1)
    expect(f.committed().map((row) => row.x)).toEqual(['a', 'b'])
  })

  test('flush commits at once (shutdown)', async () => {
    using f = fixture()
    const write = f.add('now')
    f.queue.flush()
    expect(f.committed()).toHaveLength(1)
    await write
  })
})

describe('async units of work', () => {
  test('a unit shares the group transaction and settles only after the commit', async () => {
    using f = fixture()
    let settled = false
    const unit = f.addAll(['a', 'b'])
    void unit.then(() => {
      settled = true
    })
    const single = f.add('c')
    await Promise.resolve()
    expect(settled).toBe(false)
    expect(await unit).toBe(2)
    await single
    expect(f.commits).toEqual([2])
    expect(f.committed().map((row) => row.x)).toEqual(['a', 'b', 'c'])
  })

  test('writes that arrive while a unit is in flight wait for it, in order', async () => {
    using f = fixture()
    const order: string[] = []
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const insert = f.writer.prepare('INSERT INTO t (x) VALUES (?)')
    const unit = f.queue.runUnit(async () => {
      insert.run('unit-1')
      await gate
      insert.run('unit-2')
      order.push('unit')
    })
    const after = f.queue.run(() => {
      order.push('after')
      return insert.run('after').changes
    })
    // The commit waits for the unit even past the end of the turn.
    await turn()
    await turn()
    expect(order).toEqual([])
    expect(f.committed()).toEqual([])
    release()
    await Promise.all([unit, after])
    expect(order).toEqual(['unit', 'after'])
    expect(f.commits).toEqual([2])
  })

  test('a failing unit rolls back all of its writes and fails alone', async () => {
    using f = fixture()
    await f.add('taken')
    const outcomes = await Promise.allSettled([f.add('a'), f.addAll(['b', 'taken']), f.add('c')])
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ])
    expect(f.committed().map((row) => row.x)).toEqual(['a', 'c', 'taken'])
  })

  test('a unit that throws before its first await fails alone too', async () => {
    using f = fixture()
    const thrown = f.queue.runUnit(() => {
      throw new Error('at once')
    })
    const kept = f.add('kept')
    await expect(thrown).rejects.toThrow('at once')
    await kept
    expect(f.committed().map((row) => row.x)).toEqual(['kept'])
  })

  test('a failed commit fails the units of the batch', async () => {
    using f = fixture()
    const queue = new WriteQueue(f.writer, {
      beforeCommit: () => {
        throw new Error('disk gone')
      },
    })
    const insert = f.writer.prepare('INSERT INTO t (x) VALUES (?)')
    const unit = queue.runUnit(async () => insert.run('lost').changes)
    await expect(unit).rejects.toThrow('disk gone')
    expect(f.committed()).toEqual([])
  })
})

describe('rows buffered until the commit (the audit log’s)', () => {
  /** A buffer of rows for table t, written at commit as the audit log's are. */
  function buffered(f: ReturnType<typeof fixture>) {
    let rows: string[] = []
    const insert = f.writer.prepare('INSERT INTO t (x) VALUES (?)')
    const buffer = {
      get size() {
        return rows.length
      },
      truncate: (size: number) => {
        rows.length = Math.min(rows.length, size)
      },
      flush: () => {
        const waiting = rows
        rows = []
        for (const x of waiting) insert.run(x)
      },
      push: (x: string) => rows.push(x),
    }
    f.queue.addBuffer(buffer)
    return buffer
  }

  test('commit with the writes that added them; a write rolled back takes its rows out', async () => {
    using f = fixture()
    const buffer = buffered(f)
    const kept = f.queue.run(() => buffer.push('event of a kept write'))
    const failed = f.queue.run(() => {
      buffer.push('event of a failed write')
      throw new Error('refused')
    })
    const unit = f.queue.runUnit(async () => {
      buffer.push('event of a failed unit')
      await Promise.resolve()
      throw new Error('unit refused')
    })
    const keptUnit = f.queue.runUnit(async () => {
      await Promise.resolve()
      buffer.push('event of a kept unit')
    })
    await kept
    await expect(failed).rejects.toThrow('refused')
    await expect(unit).rejects.toThrow('unit refused')
    await keptUnit
    expect(f.committed().map((row) => row.x)).toEqual([
      'event of a kept unit',
      'event of a kept write',
    ])
    expect(buffer.size).toBe(0)
  })

  test('a buffered row that cannot be inserted fails the whole batch, as a failed commit does', async () => {
    using f = fixture()
    const buffer = buffered(f)
    await f.add('taken')
    const write = f.queue.run(() => {
      f.writer.prepare('INSERT INTO t (x) VALUES (?)').run('row of the write')
      buffer.push('taken')
    })
    await expect(write).rejects.toThrow(/UNIQUE/)
    expect(f.committed().map((row) => row.x)).toEqual(['taken'])
    expect(buffer.size).toBe(0)
  })
})
