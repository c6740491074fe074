import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { testConfig } from '../../src/config'
import { makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { LocalDiskStore } from '../../src/storage/local-disk'
import { createUploadFiles } from '../../src/uploads/files'
import { makeTestApp, storedFiles, tempDir, testData, uploadDirOf } from '../helpers/app'
import { BOUNDARY, multipartBody, multipartType, randomBytes } from '../helpers/multipart'
import { cutShort } from '../helpers/wire'

setDefaultTimeout(30_000)

function leftovers(uploadDir: string) {
  return {
    placed: readdirSync(uploadDir).filter((name) => name !== '.incoming'),
    incoming: readdirSync(join(uploadDir, '.incoming')),
  }
}

/** Mounts a tmpfs of `size` at a new directory, when this machine lets us (root). */
function tinyFilesystem(size: string): { path: string; [Symbol.dispose](): void } | null {
  const dir = tempDir('roster-tinyfs-')
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir.path], {
    stderr: 'ignore',
  })
  if (mounted.exitCode !== 0) {
    dir[Symbol.dispose]()
    return null
  }
  return {
    path: dir.path,
    [Symbol.dispose]() {
      Bun.spawnSync(['umount', '-l', dir.path])
      dir[Symbol.dispose]()
    },
  }
}

const canMount = (() => {
  const probe = tinyFilesystem('64k')
  probe?.[Symbol.dispose]()
  return probe !== null
})()

describe('a full disk', () => {
  test.if(canMount)(
    'on a real 4 MiB filesystem: 507, nothing registered, no stray file; small uploads still work',
    async () => {
      using fs = tinyFilesystem('4m') as NonNullable<ReturnType<typeof tinyFilesystem>>
      const dataDir = join(fs.path, 'data')
      const deps = await makeDeps(testConfig({ dataDir }), memoryLogger())
      const { createApp } = await import('../../src/app')
      const app = createApp(deps)
      const send = (data: Uint8Array<ArrayBuffer>) =>
        app.handle(
          new Request('http://localhost/upload', {
            method: 'POST',
            body: multipartBody([{ name: 'file', filename: 'big.bin', data }]),
            headers: { 'content-type': multipartType() },
          }),
        )
      const full = await send(randomBytes(6 * 1024 * 1024))
      expect(full.status).toBe(507)
      expect(((await full.json()) as { error: { code: string } }).error.code).toBe(
        'INSUFFICIENT_STORAGE',
      )
      expect(leftovers(uploadDirOf(deps))).toEqual({ placed: [], incoming: [] })
      expect(await deps.uploads.count()).toBe(0)
      expect((await send(randomBytes(10_000))).status).toBe(201)
      await deps.close()
    },
  )

  test('when a write fails with ENOSPC: 507, and the partial file is deleted', async () => {
    using dir = tempDir()
    const storage = new LocalDiskStore(dir.path)
    async function* diskFillsUp() {
      yield new Uint8Array(1000)
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
    }
    const files = createUploadFiles({
      store: storage,
      pending: null,
      registered: async () => new Set(),
      clock: Date.now,
    })
    const failure = files.receive(diskFillsUp(), { maxFileSize: 1e9, budget: { remaining: 1e9 } })
    expect(failure).rejects.toMatchObject({ errorCode: 'INSUFFICIENT_STORAGE', status: 507 })
    await failure.catch(() => {})
    expect(leftovers(dir.path)).toEqual({ placed: [], incoming: [] })
  })
})

describe('after a crash', () => {
  test('the start-up sweep deletes unfinished and unregistered files, and keeps registered ones', async () => {
    // On disk (a bucket's sweep: test/postgres/s3-store.test.ts).
    await using data = await testData({ storage: null })
    const { config } = data
    const _dir = { path: data.dataDir }
    const first = await makeDeps(config, memoryLogger())
    const { createApp } = await import('../../src/app')
    const reply = await createApp(first).handle(
      new Request('http://localhost/upload?filename=keep.txt', {
        method: 'POST',
        body: 'keep me',
        headers: { 'content-type': 'application/octet-stream' },
      }),
    )
    const kept = ((await reply.json()) as { files: { id: string }[] }).files[0]?.id as string
    await first.close()
    // What a crash can leave: a half-written temp file, and a file renamed into place whose row never committed.
    writeFileSync(join(uploadDirOf(first), '.incoming', 'fil_halfwrittenAAAAAAAAA'), 'partial')
    writeFileSync(join(uploadDirOf(first), 'fil_orphanedAAAAAAAAAAAAA'), 'no row')
    mkdirSync(join(uploadDirOf(first), '.incoming', 'stray-dir'))
    // A CLI command opening the same data dir (a server may be running) leaves them alone.
    const cli = await makeDeps(config, memoryLogger())
    expect(leftovers(uploadDirOf(cli)).incoming.sort()).toEqual([
      'fil_halfwrittenAAAAAAAAA',
      'stray-dir',
    ])
    await cli.close()
    const log = memoryLogger()
    const second = await makeDeps(config, log, undefined, { sweepUploads: true })
    expect(leftovers(uploadDirOf(second))).toEqual({ placed: [kept], incoming: [] })
    expect(log.lines.join('')).toContain('removed 3 unfinished upload file(s)')
    await second.close()
  })
})

describe('a client that disconnects mid-upload', () => {
  /**
   * Cuts a request off and waits until the server has finished with it: it records a request
   * whose client went away as 499, after the upload's files were discarded.
   */
  async function cutShortAndWait(
    server: Awaited<ReturnType<typeof startServer>>,
    head: string,
    bodyStart: Uint8Array,
  ) {
    const before = server.deps.metrics.http.count('/upload', 'POST', 499)
    await cutShort(server.url, head, bodyStart)
    const deadline = Date.now() + 5000
    while (server.deps.metrics.http.count('/upload', 'POST', 499) === before) {
      if (Date.now() > deadline) throw new Error('the server never finished the cut-off upload')
      await Bun.sleep(5)
    }
  }

  test('leaves no file and no row (multipart and raw, with and without Content-Length)', async () => {
    await using data = await testData()
    const server = await startServer(data.config, memoryLogger())
    try {
      const body = multipartBody([
        { name: 'file', filename: 'a.bin', data: randomBytes(2 * 1024 * 1024) },
      ])
      await cutShortAndWait(
        server,
        `POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.byteLength}\r\n\r\n`,
        body.subarray(0, 500_000),
      )
      await cutShortAndWait(
        server,
        'POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: 5000000\r\n\r\n',
        randomBytes(700_000),
      )
      await cutShortAndWait(
        server,
        'POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n',
        Buffer.concat([Buffer.from('80000\r\n'), randomBytes(0x80000), Buffer.from('\r\n')]),
      )
      expect(await storedFiles(server.deps)).toEqual({ placed: [], pending: [] })
      expect(await server.deps.uploads.count()).toBe(0)
      const health = await fetch(`${server.url}/health`)
      expect(health.status).toBe(200)
    } finally {
      await server.stop()
    }
  })
})

describe('the uploads directory', () => {
  test('stored names are generated; nothing is ever written at a client-chosen path', async () => {
    await using t = await makeTestApp()
    await t.call('POST', '/upload?filename=../../../../tmp/pwned', {
      body: 'x',
      headers: { 'content-type': 'application/octet-stream' },
    })
    const files = await storedFiles(t.deps)
    expect(files.placed).toHaveLength(1)
    for (const name of [...files.placed, ...files.pending])
      expect(name).toMatch(/^fil_[A-Za-z0-9_-]{22}$/)
  })
})
