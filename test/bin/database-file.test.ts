import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { copyFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary } from '../helpers/binary'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const json = { 'content-type': 'application/json' }
const create = (url: string, n: number) =>
  fetch(`${url}/users`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: `User ${n}`, email: `user${n}@example.com` }),
  })

describe('a database file that vanishes while roster runs (the compiled binary)', () => {
  test('deleted: the next write is refused with 503, reads go on, /health is 503, one error line', async () => {
    using dir = tempDir()
    const roster = await startBinary(['--data-dir', dir.path])
    try {
      expect((await create(roster.url, 1)).status).toBe(201)
      rmSync(join(dir.path, 'roster.db'))
      const refused = await create(roster.url, 2)
      expect(refused.status).toBe(503)
      const body = await refused.json()
      expect(body.error.code).toBe('SERVICE_UNAVAILABLE')
      expect(JSON.stringify(body)).not.toMatch(/roster\.db|SQLITE|stack/i)
      // Every kind of write is refused, not only the first.
      for (let n = 3; n < 8; n++) expect((await create(roster.url, n)).status).toBe(503)
      const patch = await fetch(`${roster.url}/users/1`, {
        method: 'PATCH',
        headers: json,
        body: JSON.stringify({ name: 'Changed' }),
      })
      expect(patch.status).toBe(503)
      // Reads still answer from the open file.
      const read = await fetch(`${roster.url}/users/1`)
      expect(read.status).toBe(200)
      expect((await read.json()).name).toBe('User 1')
      await Bun.sleep(1100)
      const health = await fetch(`${roster.url}/health`)
      expect(health.status).toBe(503)
      expect((await health.json()).checks.database).toBe('failing')
      const errors = roster.stderr.filter((line) => line.includes('"level":"error"'))
      expect(errors).toHaveLength(1)
      expect(errors[0]).toContain('removed or replaced')
    } finally {
      expect(await roster.stop()).toBe(0)
    }
  })

  test('replaced by a copy: writes stay refused and /health stays 503 until a restart', async () => {
    using dir = tempDir()
    const dbPath = join(dir.path, 'roster.db')
    let roster = await startBinary(['--data-dir', dir.path])
    try {
      expect((await create(roster.url, 1)).status).toBe(201)
      // A consistent copy of what is committed, through the CLI the docs recommend.
      const backup = join(dir.path, 'copy.db')
      const copied = Bun.spawnSync([
        join(import.meta.dir, '../../dist/roster'),
        'backup',
        backup,
        '--data-dir',
        dir.path,
      ])
      expect(copied.exitCode).toBe(0)
      rmSync(dbPath)
      copyFileSync(backup, dbPath)
      expect((await create(roster.url, 2)).status).toBe(503)
      await Bun.sleep(1100)
      expect((await fetch(`${roster.url}/health`)).status).toBe(503)
      expect((await create(roster.url, 3)).status).toBe(503)
    } finally {
      expect(await roster.stop()).toBe(0)
    }
    // After a restart roster opens the file that is there, and nothing acknowledged is lost.
    rmSync(`${dbPath}-wal`, { force: true })
    rmSync(`${dbPath}-shm`, { force: true })
    roster = await startBinary(['--data-dir', dir.path])
    try {
      expect((await fetch(`${roster.url}/users/1`)).status).toBe(200)
      expect((await create(roster.url, 4)).status).toBe(201)
      expect((await fetch(`${roster.url}/health`)).status).toBe(200)
    } finally {
      await roster.stop()
    }
  })
})
