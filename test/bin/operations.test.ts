import { Database } from 'bun:sqlite'
import { beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'

beforeAll(requireBinary)

describe('roster backup (the compiled binary)', () => {
  test('copies a live database while it takes writes: every row committed before the backup is in the copy', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    try {
      const acknowledged: number[] = []
      let writing = true
      let n = 0
      const writer = (async () => {
        while (writing) {
          const response = await fetch(`${server.url}/users`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ name: `User ${n}`, email: `user${n++}@example.com` }),
          })
          const body = (await response.json()) as { id: number }
          if (response.status === 201) acknowledged.push(body.id)
        }
      })()
      while (acknowledged.length < 200) await Bun.sleep(5)
      const before = [...acknowledged]
      const target = join(dir.path, 'backup.db')
      const backup = await runBinary(['backup', target, '--data-dir', dir.path])
      const during = acknowledged.length
      writing = false
      await writer
      expect(backup.code).toBe(0)
      expect(backup.stdout).toMatch(
        /^backed up .*roster\.db to .*backup\.db: [0-9.]+ KiB in [0-9.]+ s\n$/,
      )
      expect(during).toBeGreaterThan(before.length)
      const copy = new Database(target, { readonly: true })
      const ids = new Set(
        copy
          .query<{ id: number }, []>('SELECT id FROM users')
          .all()
          .map((row) => row.id),
      )
      expect(before.filter((id) => !ids.has(id))).toEqual([])
      expect(copy.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
      copy.close()

      const again = await runBinary(['backup', target, '--data-dir', dir.path])
      expect(again.code).toBe(1)
      expect(again.stderr).toBe(`roster: ${target} already exists; not overwriting it\n`)
    } finally {
      await server.stop()
    }
  })

  test('backup without FILE, or with two, is a usage error', async () => {
    for (const args of [['backup'], ['backup', 'a.db', 'b.db']]) {
      const result = await runBinary(args)
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})
