import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { startPostgres } from '../../scripts/postgres-server'
import { createPgAuditRows } from '../../src/backends/postgres/audit'
import { runPgMigrations } from '../../src/backends/postgres/migrate'

// The live feed orders PostgreSQL's events by (transaction id, seq). A fresh cluster's
// transaction ids are in the hundreds, so this test, on a cluster of its own, writes events
// while they pass 999 → 1000, where text order and number order part (the feed once sorted
// by the text and handed 1000 out before 999, then 1000 again).

describe('the audit feed’s order on PostgreSQL', () => {
  test('holds while transaction ids gain a digit, with writers that commit out of order', async () => {
    const server = await startPostgres({ reapWith: process.pid })
    const pool = new SQL(server.url, { max: 16 })
    try {
      await runPgMigrations(pool)
      const rows = createPgAuditRows(pool)
      const [{ next } = { next: '0' }] = await pool<{ next: string }[]>`
        SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next`
      expect(Number(next)).toBeLessThan(900)
      let stop = false
      let written = 0
      const writer = async (n: number) => {
        while (!stop) {
          await pool.begin(async (tx) => {
            // Take a transaction id first, then hold it a moment: commits overtake each other.
            await tx`SELECT pg_current_xact_id()`
            await Bun.sleep(Math.random() * 4)
            await rows.inUnit(tx).insert({
              at: new Date().toISOString(),
              actor_type: 'system',
              actor_id: null,
              action: 'user.created',
              target_type: 'user',
              target_id: String(n),
              request_id: null,
              ip: null,
              changes: null,
            })
          })
          written += 1
        }
      }
      const writers = Array.from({ length: 8 }, (_, n) => writer(n))
      let position: string | null = await rows.head()
      const seen: string[] = []
      const passed = async () => {
        const [{ xmin } = { xmin: '0' }] = await pool<{ xmin: string }[]>`
          SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`
        return Number(xmin) > 1100
      }
      // Read once they are past it: one batch then holds ids on both sides of the boundary.
      while (!(await passed())) await Bun.sleep(20)
      stop = true
      await Promise.all(writers)
      for (;;) {
        const rest = await rows.after(position, 500)
        if (rest.length === 0) break
        for (const entry of rest) seen.push(entry.position)
        position = rest.at(-1)?.position ?? position
      }
      expect(seen.length).toBe(written)
      expect(seen.every((place, i) => i === 0 || place > (seen[i - 1] as string))).toBe(true)
      const xids = seen.map((place) => Number(place.split('.')[0]))
      expect(xids.some((xid) => xid < 1000)).toBe(true)
      expect(xids.some((xid) => xid >= 1000)).toBe(true)
    } finally {
      await pool.close()
      server.stop()
    }
  })
})
