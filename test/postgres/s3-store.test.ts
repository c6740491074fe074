import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { createPgPendingFiles } from '../../src/backends/postgres/pending-objects'
import { S3Store } from '../../src/storage/s3'
import { randomBytes } from '../helpers/multipart'
import { freshDatabase } from '../helpers/postgres'
import {
  clientOptions,
  freshStorage,
  incompleteUploadsOf,
  incompleteUploadsUnder,
  objectsUnder,
  testS3,
} from '../helpers/s3'
import { chunks, fileStoreContract, lifeOn, roomy } from '../storage/contract'

/** An S3 store on the test bucket (its own prefix) with its pending list in a fresh database. */
async function s3Store() {
  const database = await freshDatabase()
  const pool = new SQL(database.url, { max: 2 })
  await runPgMigrations(pool)
  const { storage, env } = await freshStorage()
  const client = new Bun.S3Client({ ...clientOptions(env), bucket: storage.bucket })
  const store = new S3Store(
    client,
    { ...storage, endpoint: env.S3_ENDPOINT ?? null },
    incompleteUploadsOf(env, storage.bucket),
  )
  return {
    store,
    pending: createPgPendingFiles(pool),
    prefix: storage.prefix,
    pool,
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
    const files = lifeOn(made)
    const received = await files.receive(chunks(randomBytes(1000)), roomy())
    expect(await pendingIds(made.pool)).toEqual([received.fileId])
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
    await files.committed([received.fileId])
    expect(await pendingIds(made.pool)).toEqual([])
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
  })

  test('a file over its limit, once cleaned up, leaves no object, no pending row, no multipart upload in progress', async () => {
    await using made = await s3Store()
    const files = lifeOn(made)
    // 12 MiB: parts of a multipart upload go out before the limit stops it.
    const refused = files.receive(chunks(randomBytes(12 * 1024 * 1024), 1024 * 1024), {
      maxFileSize: 8 * 1024 * 1024,
      budget: { remaining: 1e9 },
    })
    await expect(refused).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
    await files.settled()
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
    expect(await incompleteUploadsUnder(made.prefix)).toEqual([])
  })

  test('a multipart upload (12 MiB) reads back whole and by range across parts', async () => {
    await using made = await s3Store()
    const data = randomBytes(12 * 1024 * 1024)
    const received = await lifeOn(made).receive(chunks(data, 256 * 1024), roomy())
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

  test('a source that fails mid-stream, once cleaned up, leaves no object and no pending row', async () => {
    await using made = await s3Store()
    async function* failing() {
      yield randomBytes(6 * 1024 * 1024)
      throw new Error('the client went away')
    }
    const files = lifeOn(made)
    const refused = files.receive(failing(), roomy())
    await expect(refused).rejects.toThrow('the client went away')
    await files.settled()
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('the sweep leaves young pending objects (another instance may be writing them)', async () => {
    await using made = await s3Store()
    const files = lifeOn(made)
    const inFlight = await files.receive(chunks(randomBytes(10)), roomy())
    expect(await files.sweep()).toBe(0)
    expect(await objectsUnder(made.prefix)).toEqual([inFlight.fileId])
    files.age()
    expect(await files.sweep()).toBe(1)
    expect(await objectsUnder(made.prefix)).toEqual([])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('the sweep never lists the bucket: an object nobody listed as pending is not its business', async () => {
    await using made = await s3Store()
    await made.store.write('fil_notOursAAAAAAAAAAAAAA', chunks(randomBytes(10)))
    const files = lifeOn(made)
    files.age()
    expect(await files.sweep()).toBe(0)
    expect(await objectsUnder(made.prefix)).toEqual(['fil_notOursAAAAAAAAAAAAAA'])
  })

  test('a registered object whose pending row outlived its commit keeps its object', async () => {
    await using made = await s3Store()
    const registered = new Set<string>()
    const files = lifeOn(made, registered)
    const received = await files.receive(chunks(randomBytes(10)), roomy())
    registered.add(received.fileId)
    files.age()
    expect(await files.sweep()).toBe(0)
    expect(await objectsUnder(made.prefix)).toEqual([received.fileId])
    expect(await pendingIds(made.pool)).toEqual([])
  })

  test('list pages through more objects than one listing answers', async () => {
    await using made = await s3Store()
    const ids = Array.from({ length: 1005 }, (_, i) => `fil_${String(i).padStart(22, '0')}`)
    const s3 = await testS3()
    const client = new Bun.S3Client({ ...clientOptions(s3.env), bucket: s3.bucket })
    for (let i = 0; i < ids.length; i += 50) {
      await Promise.all(ids.slice(i, i + 50).map((id) => client.write(`${made.prefix}/${id}`, 'x')))
    }
    const listed: string[] = []
    for await (const id of made.store.list()) listed.push(id)
    expect(listed.sort()).toEqual(ids)
  })

  test('check() passes on the bucket and fails on a missing one', async () => {
    await using made = await s3Store()
    await made.store.check()
    const { env } = await freshStorage()
    const missing = new S3Store(
      new Bun.S3Client({ ...clientOptions(env), bucket: 'no-such-bucket' }),
      { bucket: 'no-such-bucket', prefix: '', endpoint: null },
      incompleteUploadsOf(env, 'no-such-bucket'),
    )
    await expect(missing.check()).rejects.toThrow()
  })
})
