import { describe, expect, test } from 'bun:test'
import { BucketTimeout, bucketDeadlines } from '../../src/storage/deadlines'
import { IncompleteUploads } from '../../src/storage/multipart-uploads'
import { S3Store } from '../../src/storage/s3'
import { randomBytes } from '../helpers/multipart'
import { startS3StandIn } from '../helpers/s3-stand-in'
import { chunks } from './contract'

const BUCKET = 'roster-test'
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' }
const deadlines = { dataMs: 400, controlMs: 200 }

/** An S3 store on a bucket that takes every request and never answers one. */
function storeOnSilentBucket(endpoint: string) {
  const client = new Bun.S3Client({ ...credentials, endpoint, bucket: BUCKET })
  const incomplete = new IncompleteUploads(
    { ...credentials, bucket: BUCKET, endpoint },
    { deadlines },
  )
  return new S3Store(client, { bucket: BUCKET, prefix: 'p', endpoint }, incomplete, deadlines)
}

/** How long `work` took to settle, and how. */
async function timed(work: () => Promise<unknown>) {
  const started = performance.now()
  const outcome = await work().then(
    () => null,
    (error: unknown) => error,
  )
  return { ms: performance.now() - started, error: outcome }
}

describe('bucket deadlines', () => {
  test('the default: 30 s for calls that move bytes, 10 s for small ones; a short timeout bounds both', () => {
    expect(bucketDeadlines()).toEqual({ dataMs: 30_000, controlMs: 10_000 })
    expect(bucketDeadlines(2000)).toEqual({ dataMs: 2000, controlMs: 2000 })
  })

  test('on a bucket that never answers, every call of the S3 store fails within its deadline', async () => {
    await using bucket = startS3StandIn({ misbehaviour: 'hold' })
    const store = storeOnSilentBucket(bucket.endpoint)
    const write = await timed(() =>
      store.write('fil_writeAAAAAAAAAAAAAAAA', chunks(randomBytes(10))),
    )
    expect(write.error).toMatchObject({ errorCode: 'SERVICE_UNAVAILABLE' })
    // The write's deadline, then the writer's abort (a control call) at most.
    expect(write.ms).toBeLessThan(deadlines.dataMs + deadlines.controlMs + 500)
    const read = await timed(() => store.read('fil_readAAAAAAAAAAAAAAAAA', null))
    expect(read.error).toMatchObject({ errorCode: 'SERVICE_UNAVAILABLE' })
    expect(read.ms).toBeLessThan(deadlines.dataMs + 500)
    const deleted = await timed(() => store.delete('fil_deleteAAAAAAAAAAAAAAA'))
    expect(deleted.error).toBeInstanceOf(BucketTimeout)
    expect(deleted.ms).toBeLessThan(deadlines.controlMs + 500)
    const listed = await timed(async () => {
      for await (const _ of store.list());
    })
    expect(listed.error).toBeInstanceOf(BucketTimeout)
    expect(listed.ms).toBeLessThan(deadlines.dataMs + 500)
    const checked = await timed(() => Promise.resolve(store.check()))
    expect(checked.error).toBeInstanceOf(BucketTimeout)
    expect(checked.ms).toBeLessThan(deadlines.controlMs + 500)
    expect(bucket.caught).toBeGreaterThanOrEqual(5)
  })
})
