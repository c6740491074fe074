import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { createPgPendingObjects } from '../../src/backends/postgres/pending-objects'
import { PENDING_IDLE_MS, S3Store } from '../../src/storage/s3'
import { randomBytes } from '../helpers/multipart'
import { freshDatabase } from '../helpers/postgres'
import {
  clientOptions,
  freshStorage,
  incompleteUploadsOf,
  incompleteUploadsUnder,
  objectsUnder,
} from '../helpers/s3'
import { chunks, fileStoreContract, roomy } from '../storage/contract'

/** An S3 store on the test bucket (its own prefix) with its pending list in a fresh database. */
async function s3Store() {
  const database = await freshDatabase()
  const pool = new SQL(database.url, { max: 2 })
  await runPgMigrations(pool)
  const { storage, env } = await freshStorage()
  let skew = 0
  const client = new Bun.S3Client({ ...clientOptions(env), bucket: storage.bucket })
  const store = new S3Store(
    client,
    { ...storage, endpoint: env.S3_ENDPOINT ?? null },
    createPgPendingObjects(pool),
    () => Date.now() + skew,
    incompleteUploadsOf(env, storage.bucket),
  )
  return {
    store,
    prefix: storage.prefix,
    pool,
    beforeSweep: () => {
      skew = PENDING_IDLE_MS + 60_000
    },
    async [Symbol.asyncDispose]() {
      await pool.close()
      await database[Symbol.asyncDispose]()
    },
  }
}

fileStoreContract('S3 (s3rver)', s3Store)

const pendingIds = async (pool: SQL) =>
  (await pool<{ id: string }[]>`SELECT id FROM pending_objects ORDER BY id`).map((row) => row.id)

describe('S3 store', () => {
  test('an object is listed as pending while it streams and until its upload committed', async () => {
    await using made = await s3Store()
    const received = await made.store.receive(chunks(randomBytes(1000)), roomy())
    expect(await pendingIds(made.pool)).toEqual([received.fileId])
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
    made.store.place([received.fileId])
    await made.store.committed([received.fileId])
    expect(await pendingIds(made.pool)).toEqual([])
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
  })

  test('a file over its limit leaves no object and no pending row; multipart sizes too', async () => {
    await using made = await s3Store()
    // 12 MiB: three parts of a multipart upload before the limit stops it.
    const refused = made.store.receive(chunks(randomBytes(12 * 1024 * 1024), 1024 * 1024), {
      maxFileSize: 11 * 1024 * 1024,
      budget: { remaining: 1e9 },
    })
    expect(refused).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
    await refused.catch(() => {})
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('a multipart upload (12 MiB) reads back whole and by range across parts', async () => {
    await using made = await s3Store()
    const data = randomBytes(12 * 1024 * 1024)
    const received = await made.store.receive(chunks(data, 256 * 1024), roomy())
    expect(received.size).toBe(data.byteLength)
    const whole = new Uint8Array(
      await new Response(await made.store.read(received.fileId, null)).arrayBuffer(),
    )
    expect(whole.byteLength).toBe(data.byteLength)
    expect(Bun.hash(whole)).toBe(Bun.hash(data))
    const start = 5 * 1024 * 1024 - 10
    const part = await made.store.read(received.fileId, { start, end: start + 19 })
    expect(new Uint8Array(await new Response(part).arrayBuffer())).toEqual(
      data.subarray(start, start + 20),
    )
  })

  test('a source that fails mid-stream leaves no object and no pending row', async () => {
    await using made = await s3Store()
    async function* failing() {
      yield randomBytes(6 * 1024 * 1024)
      throw new Error('the client went away')
    }
    const refused = made.store.receive(failing(), roomy())
    expect(refused).rejects.toMatchObject({ errorCode: 'SERVICE_UNAVAILABLE' })
    await refused.catch(() => {})
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('the sweep leaves young pending objects (another instance may be writing them)', async () => {
    await using made = await s3Store()
    const inFlight = await made.store.receive(chunks(randomBytes(10)), roomy())
    expect(await made.store.sweep(async () => new Set())).toBe(0)
    expect(await objectsUnder(made.prefix)).toEqual([inFlight.fileId])
    made.beforeSweep()
    expect(await made.store.sweep(async () => new Set())).toBe(1)
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('a registered object whose pending row outlived its commit keeps its object', async () => {
    await using made = await s3Store()
    const received = await made.store.receive(chunks(randomBytes(10)), roomy())
    made.beforeSweep()
    expect(await made.store.sweep(async (ids) => new Set(ids))).toBe(0)
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('an upload over its limit mid-way leaves no object, no pending row, no multipart upload in progress', async () => {
    await using made = await s3Store()
    const tooBig = made.store.receive(chunks(randomBytes(12 * 1024 * 1024), 1024 * 1024), {
      maxFileSize: 8 * 1024 * 1024,
      budget: { remaining: 1e9 },
    })
    await expect(tooBig).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
    expect(await incompleteUploadsUnder(made.prefix)).toEqual([])
  })

  test('check() passes on the bucket and fails on a missing one', async () => {
    await using made = await s3Store()
    await made.store.check()
    const { env } = await freshStorage()
    const missing = new S3Store(
      new Bun.S3Client({ ...clientOptions(env), bucket: 'no-such-bucket' }),
      { bucket: 'no-such-bucket', prefix: '', endpoint: null },
      createPgPendingObjects(made.pool),
      Date.now,
      incompleteUploadsOf(env, 'no-such-bucket'),
    )
    expect(missing.check()).rejects.toThrow()
    await missing.check().catch(() => {})
  })
})
