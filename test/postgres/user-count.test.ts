import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { USER_COUNT_FROM } from '../../src/backends/postgres/user-count'
import { createPgUserRows } from '../../src/backends/postgres/users'
import { freshDatabase } from '../helpers/postgres'

// The number of users on PostgreSQL (backends/postgres/user-count.ts): statement triggers append
// deltas, instances fold them. Whatever interleaves, every read is exact in its snapshot.

describe('the kept user count on PostgreSQL', () => {
  test('two instances creating, deleting and importing at once, reading and folding meanwhile', async () => {
    await using database = await freshDatabase()
    const pools = [new SQL(database.url, { max: 8 }), new SQL(database.url, { max: 8 })]
    try {
      await runPgMigrations(pools[0] as SQL)
      const [a, b] = pools.map((pool) => createPgUserRows(pool, () => new Date()))
      if (a === undefined || b === undefined) throw new Error('two instances')
      const exact = async () => {
        const [row] = await (pools[0] as SQL)<{ n: number }[]>`SELECT count(*)::int AS n FROM users`
        return row?.n ?? 0
      }
      let reads = 0
      let wrong = 0
      let writing = true
      const reader = (async () => {
        while (writing) {
          // The kept total and a count of the table, in one statement's snapshot.
          const [row] = await (pools[1] as SQL).unsafe<{ kept: string; counted: string }[]>(
            `SELECT (SELECT total FROM ${USER_COUNT_FROM} c) AS kept,
               (SELECT count(*) FROM users) AS counted`,
          )
          if (row?.kept !== row?.counted) wrong++
          reads++
        }
      })()
      const writes = Array.from({ length: 8 }, async (_, n) => {
        const rows = n % 2 === 0 ? a : b
        for (let i = 0; i < 60; i++) {
          const user = await rows.insert({
            name: `W${n} ${i}`,
            email: `w${n}.${i}@example.com`,
            passwordHash: null,
          })
          if (i % 5 === 0) await rows.remove(user.id, { versions: null })
        }
      })
      const imports = (async () => {
        const batch = Array.from({ length: 300 }, (_, i) => ({
          name: `Imported ${i}`,
          email: `imported${i}@example.com`,
          passwordHash: null,
        }))
        await a.insertMany(batch, { allOrNothing: true })
        // Rolled back (its first row is taken): it counts nothing.
        const again = [
          { name: 'Again', email: 'imported0@example.com', passwordHash: null },
          { name: 'New', email: 'rolled-back@example.com', passwordHash: null },
        ]
        expect((await b.insertMany(again, { allOrNothing: true })).inserted).toBe(0)
      })()
      // Past 256 deltas a read folds them at once, while the writers go on.
      await Promise.all([...writes, imports])
      writing = false
      await reader
      expect(reads).toBeGreaterThan(0)
      expect(wrong).toBe(0)
      expect(await a.count()).toBe(await exact())
      expect(await b.count()).toBe(300 + 8 * 60 - 8 * 12)
      // Within a second of the last write its instance folds the deltas into the count.
      await Bun.sleep(1500)
      const [left] = await (pools[0] as SQL)<{ n: number }[]>`
        SELECT count(*)::int AS n FROM user_count_deltas`
      expect(left?.n).toBe(0)
      expect(await b.count()).toBe(await exact())
    } finally {
      for (const pool of pools) await pool.close()
    }
  })
})
