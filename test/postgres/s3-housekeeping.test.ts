import { describe, expect, test } from 'bun:test'
import { purgeExpired } from '../../src/deps'
import { PENDING_IDLE_MS } from '../../src/uploads/files'
import { dbQuery, makeTestApp } from '../helpers/app'
import { clientOptions, objectsUnder, testS3 } from '../helpers/s3'

describe('housekeeping with uploads in a bucket (npm run test:postgres)', () => {
  test('the purge deletes objects a dead instance left idle past minutes, and keeps ones still streaming', async () => {
    await using t = await makeTestApp()
    const storage = t.config.storage
    if (storage === null) throw new Error('run with npm run test:postgres (uploads in S3)')
    const s3 = await testS3()
    const client = new Bun.S3Client({ ...clientOptions(s3.env), bucket: storage.bucket })
    const old = Date.now() - PENDING_IDLE_MS - 60_000
    // What an instance killed mid-upload leaves: the object (or its parts) and its pending row.
    for (const [id, startedAt] of [
      ['fil_deadInstanceAAAAAAAAA', old],
      ['fil_stillStreamingAAAAAAA', Date.now()],
    ] as const) {
      await client.write(`${storage.prefix}/${id}`, 'partial')
      await dbQuery(
        t.deps,
        'INSERT INTO pending_objects (id, started_at) VALUES (?, ?)',
        id,
        startedAt,
      )
    }
    // Two instances' housekeeping at once.
    await Promise.all([purgeExpired(t.deps), purgeExpired(t.deps)])
    expect(await objectsUnder(storage.prefix)).toEqual(['fil_stillStreamingAAAAAAA'])
    const pending = await dbQuery<{ id: string }>(t.deps, 'SELECT id FROM pending_objects')
    expect(pending.map((row) => row.id)).toEqual(['fil_stillStreamingAAAAAAA'])
  })
})
