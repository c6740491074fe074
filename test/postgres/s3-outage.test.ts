import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type S3Server, startS3 } from '../../scripts/s3-server'
import { createApp } from '../../src/app'
import { testConfig } from '../../src/config'
import { makeDeps, sweepAbandonedUploads } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { PENDING_IDLE_MS } from '../../src/uploads/files'
import { dbQuery, expectEnvelope, readReply, send, tempDir } from '../helpers/app'
import { until } from '../helpers/cluster'
import { multipartBody, multipartType, randomBytes } from '../helpers/multipart'
import { freshDatabase } from '../helpers/postgres'
import { incompleteUploadsUnder, objectsUnder } from '../helpers/s3'

/** Its own s3rver, which the tests stop and start again: the bucket goes away under roster. */
let s3: S3Server
beforeAll(async () => {
  s3 = await startS3({ reapWith: process.pid })
})
afterAll(() => s3.remove())

async function appOnOwnBucket(prefix = 'outage') {
  const dir = tempDir()
  const database = await freshDatabase()
  const config = testConfig({
    dataDir: dir.path,
    databaseUrl: database.url,
    storage: { bucket: s3.bucket, prefix },
  })
  // A clock the test can move forward, for the sweep of abandoned uploads.
  let skew = 0
  const now = () => new Date(Date.now() + skew)
  const deps = await makeDeps(config, memoryLogger(), now, { env: s3.env })
  const app = createApp(deps)
  return {
    deps,
    app,
    later: (ms: number) => {
      skew += ms
    },
    call: (method: string, path: string, init = {}) => send(app, method, path, init),
    async [Symbol.asyncDispose]() {
      await deps.close()
      await database[Symbol.asyncDispose]()
      dir[Symbol.dispose]()
    },
  }
}

const rawUpload = (body: string) => ({
  body,
  headers: { 'content-type': 'application/octet-stream' },
})

describe('the S3 server stopped', () => {
  test('uploads and downloads are 503 with the envelope, every other route works, /health says storage; all back once it returns', async () => {
    await using t = await appOnOwnBucket()
    const before = await t.call('POST', '/upload?filename=a.txt&public=true', rawUpload('kept'))
    expect(before.status).toBe(201)
    const fileUrl = `/files/${before.body.files[0].id}`
    s3.stop()
    try {
      const upload = await t.call('POST', '/upload?filename=b.txt', rawUpload('refused'))
      expectEnvelope(upload, 503, 'SERVICE_UNAVAILABLE')
      expect(upload.headers.get('retry-after')).toBe('5')
      // A multipart upload too: the body is read in full before the bucket's refusal arrives,
      // and the answer is still the bucket's 503, not a form without a file.
      const form = await t.call('POST', '/upload', {
        body: multipartBody([{ name: 'file', filename: 'c.bin', data: randomBytes(300_000) }]),
        headers: { 'content-type': multipartType() },
      })
      expectEnvelope(form, 503, 'SERVICE_UNAVAILABLE')
      expectEnvelope(await t.call('GET', fileUrl), 503, 'SERVICE_UNAVAILABLE')
      expectEnvelope(
        await t.call('GET', fileUrl, { headers: { range: 'bytes=0-1' } }),
        503,
        'SERVICE_UNAVAILABLE',
      )
      // The rows are in PostgreSQL: the upload's details and every other route answer.
      expect((await t.call('GET', `/uploads/${before.body.id}`)).status).toBe(200)
      expect(
        (
          await t.call('POST', '/users', {
            json: { name: 'A', email: 'a@x.test', password: 'correct horse battery' },
          })
        ).status,
      ).toBe(201)
      expect((await t.call('GET', '/users')).status).toBe(200)
      const health = await t.call('GET', '/health')
      expectEnvelope(health, 503, 'SERVICE_UNAVAILABLE')
      expect(health.body.checks).toMatchObject({ database: 'ok', storage: 'failing' })
      // A bucket outage does not take the instance out of the balancer.
      expect((await t.call('GET', '/health/ready')).status).toBe(200)
      expect(await t.deps.uploads.count()).toBe(1)
    } finally {
      await s3.start()
    }
    const download = await t.call('GET', fileUrl)
    expect(download.status).toBe(200)
    expect(download.text).toBe('kept')
    expect((await t.call('POST', '/upload?filename=c.txt', rawUpload('again'))).status).toBe(201)
  })
})

describe('an upload cut off by the outage', () => {
  test('answers 503; once the bucket is back, its parts are aborted and its pending row swept within minutes', async () => {
    await using t = await appOnOwnBucket('cutoff')
    const part = new Uint8Array(6 * 1024 * 1024).fill(0x61)
    let sendRest = () => {}
    const rest = new Promise<void>((resolve) => {
      sendRest = resolve
    })
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(part)
        await rest
        for (let i = 0; i < 2; i += 1) controller.enqueue(part)
        controller.close()
      },
    })
    const answer = t.app.handle(
      new Request('http://localhost/upload?filename=big.bin', {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit),
    )
    // The first part is in the bucket as a multipart upload in progress; then the bucket goes.
    await until(async () => (await incompleteUploadsUnder('cutoff', s3.endpoint)).length === 1)
    s3.stop()
    sendRest()
    const reply = await readReply(await answer)
    expectEnvelope(reply, 503, 'SERVICE_UNAVAILABLE')
    // Its clean-up runs after the answer, and fails while the bucket is away.
    await t.deps.uploadCleanups()
    await s3.start()
    // Nothing could be cleaned while the bucket was away: the row says so.
    const pending = () => dbQuery<{ id: string }>(t.deps, 'SELECT id FROM pending_objects')
    expect(await pending()).toHaveLength(1)
    expect(await incompleteUploadsUnder('cutoff', s3.endpoint)).toHaveLength(1)
    // A minute's sweep leaves it while it is young; once idle past five minutes, it goes.
    await sweepAbandonedUploads(t.deps)
    expect(await pending()).toHaveLength(1)
    t.later(PENDING_IDLE_MS + 60_000)
    await sweepAbandonedUploads(t.deps)
    expect(await pending()).toEqual([])
    expect(await incompleteUploadsUnder('cutoff', s3.endpoint)).toEqual([])
    expect(await objectsUnder('cutoff', s3.endpoint)).toEqual([])
  })
})
