import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary } from '../helpers/binary'
import { multipartBody, multipartType, randomBytes } from '../helpers/multipart'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const upload = (url: string, size: number) =>
  fetch(`${url}/upload`, {
    method: 'POST',
    headers: { 'content-type': multipartType() },
    body: multipartBody([{ name: 'file', filename: 'a.bin', data: randomBytes(size) }]),
  })
const rawUpload = (url: string) =>
  fetch(`${url}/upload?filename=a.txt`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: 'hello',
  })

/** A tmpfs of `size` (root only: CI runs as root). Fails loudly elsewhere, never skips. */
function tinyFilesystem(size: string) {
  const dir = tempDir('roster-tinyfs-')
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir.path])
  if (mounted.exitCode !== 0) {
    dir[Symbol.dispose]()
    throw new Error('this test mounts a tmpfs: run it as root (CI does)')
  }
  return {
    path: dir.path,
    [Symbol.dispose]() {
      Bun.spawnSync(['umount', dir.path])
      dir[Symbol.dispose]()
    },
  }
}

describe('storage failures (the compiled binary)', () => {
  test('uploads/ missing or not a directory: 503 SERVICE_UNAVAILABLE with the envelope, not 500', async () => {
    using dir = tempDir()
    const uploads = join(dir.path, 'uploads')
    const roster = await startBinary(['--data-dir', dir.path])
    try {
      rmSync(uploads, { recursive: true })
      for (const reply of [await upload(roster.url, 1000), await rawUpload(roster.url)]) {
        expect(reply.status).toBe(503)
        const body = await reply.json()
        expect(body.error.code).toBe('SERVICE_UNAVAILABLE')
        expect(JSON.stringify(body)).not.toContain(dir.path)
      }
      writeFileSync(uploads, 'not a directory')
      expect((await upload(roster.url, 1000)).status).toBe(503)
      expect((await rawUpload(roster.url)).status).toBe(503)
      await Bun.sleep(1100)
      const health = await fetch(`${roster.url}/health`)
      expect(health.status).toBe(503)
      expect((await health.json()).checks.storage).toBe('failing')
      // Nothing was registered meanwhile.
      expect((await (await fetch(`${roster.url}/metrics`)).text()).match(/status="500"/)).toBeNull()
    } finally {
      expect(await roster.stop()).toBe(0)
    }
    expect(roster.stderr.filter((line) => line.includes('unhandled error'))).toEqual([])
  })

  test('disk full: 507s, /health 503 with the disk failing and its free bytes, one error line for the burst; recovers', async () => {
    using fs = tinyFilesystem('6m')
    const dataDir = join(fs.path, 'data')
    const roster = await startBinary(['--data-dir', dataDir])
    try {
      expect((await fetch(`${roster.url}/health`)).status).toBe(200)
      for (let i = 0; i < 4; i++)
        expect((await upload(roster.url, 8 * 1024 * 1024)).status).toBe(507)
      await Bun.sleep(1100)
      const health = await fetch(`${roster.url}/health`)
      expect(health.status).toBe(503)
      const body = await health.json()
      expect(body.checks).toEqual({ database: 'ok', storage: 'ok', disk: 'failing' })
      expect(body.disk_free_bytes).toBeGreaterThan(0)
      expect(body.error.code).toBe('SERVICE_UNAVAILABLE')
      expect(body.error.message).toContain('bytes free')
      const fullLines = roster.stderr.filter((line) => line.includes('the disk is full'))
      expect(fullLines).toHaveLength(1)
      expect(fullLines[0]).toContain('"level":"error"')
      // A small upload still fits: the disk takes writes again, and /health says so.
      expect((await upload(roster.url, 10_000)).status).toBe(201)
      await Bun.sleep(1100)
      const healthy = await fetch(`${roster.url}/health`)
      expect(healthy.status).toBe(200)
      expect((await healthy.json()).checks.disk).toBe('ok')
      expect(readdirSync(join(dataDir, 'uploads', '.incoming'))).toEqual([])
    } finally {
      expect(await roster.stop()).toBe(0)
    }
  })
})
