import { describe, expect, test } from 'bun:test'
import { memoryLogger } from '../../src/log'
import { BucketTimeout } from '../../src/storage/deadlines'
import { IncompleteUploads } from '../../src/storage/multipart-uploads'
import { startS3StandIn } from '../helpers/s3-stand-in'

const deadlines = { dataMs: 400, controlMs: 200 }

function incompleteUploadsAt(endpoint: string) {
  const log = memoryLogger()
  const access = {
    bucket: 'roster-test',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    region: 'us-east-1',
    endpoint,
  }
  return { incomplete: new IncompleteUploads(access, { deadlines, log }), log }
}

const warnings = (lines: string[]) =>
  lines.map((line) => JSON.parse(line)).filter((line) => line.level === 'warn')

describe('aborting multipart uploads on a service that lacks the operations', () => {
  test('a 501 NotImplemented is answered at once, logged once, and not asked again', async () => {
    await using bucket = startS3StandIn({ misbehaviour: 'refuse' })
    const { incomplete, log } = incompleteUploadsAt(bucket.endpoint)
    const started = performance.now()
    for (const key of ['p/fil_a', 'p/fil_b', 'p/fil_c']) await incomplete.abort(key)
    // aws4fetch alone retries a 5xx ten times with backoff: about 51 s for each key.
    expect(performance.now() - started).toBeLessThan(1000)
    expect(bucket.caught).toBe(1)
    const [warning, ...more] = warnings(log.lines)
    expect(more).toEqual([])
    expect(warning.message).toContain('does not support ListMultipartUploads')
    expect(warning.message).toContain('lifecycle rule')
  })

  test('a request held unanswered fails at its deadline; three in a row are a lack, logged once', async () => {
    await using bucket = startS3StandIn({ misbehaviour: 'hold' })
    const { incomplete, log } = incompleteUploadsAt(bucket.endpoint)
    for (const key of ['p/fil_a', 'p/fil_b']) {
      const started = performance.now()
      const failure = await incomplete.abort(key).catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(BucketTimeout)
      expect(performance.now() - started).toBeLessThan(deadlines.controlMs + 500)
    }
    expect(warnings(log.lines)).toEqual([])
    await incomplete.abort('p/fil_c')
    const started = performance.now()
    await incomplete.abort('p/fil_d')
    expect(performance.now() - started).toBeLessThan(50)
    expect(bucket.caught).toBe(3)
    expect(warnings(log.lines)).toHaveLength(1)
    expect(warnings(log.lines)[0].message).toContain('does not support ListMultipartUploads')
  })
})
