import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type S3Server, startS3 } from '../../scripts/s3-server'
import { tempDir } from '../helpers/app'
import {
  cleanEnv,
  type RunningBinary,
  requireBinary,
  runBinary,
  startBinary,
} from '../helpers/binary'
import { until } from '../helpers/cluster'
import { multipartBody, multipartType } from '../helpers/multipart'
import { freshDatabase, queryOnce } from '../helpers/postgres'
import { objectsUnder } from '../helpers/s3'
import { startS3StandIn } from '../helpers/s3-stand-in'

// The compiled binary on PostgreSQL with its uploads on an S3-compatible service that lacks
// ListMultipartUploads and AbortMultipartUpload: s3rver as published (it answers 501 and 405),
// and a stand-in in front of it that holds those two requests unanswered.

/** s3rver as published, unpatched; stopped after the file's tests. */
let stock: S3Server
beforeAll(async () => {
  stock = await startS3({ stock: true, reapWith: process.pid })
})
afterAll(() => stock.remove())

/** What a client waits for at most here: an answer held by clean-up waited 40 s and more. */
const PROMPT_MS = 2000

/** roster serving PostgreSQL and a bucket at `endpoint`, and an API key that may delete. */
async function rosterOn(endpoint: string, prefix: string, settings: Record<string, string> = {}) {
  requireBinary()
  const database = await freshDatabase()
  const dir = tempDir()
  const env = cleanEnv({ ...stock.env, S3_ENDPOINT: endpoint, ...settings })
  const common = ['--database-url', database.url, '--data-dir', dir.path]
  const storage = ['--storage', `s3://${stock.bucket}/${prefix}`]
  const server = await startBinary([...common, ...storage], { env })
  const key = await runBinary(['keys', 'create', '--name', 'ops', ...common, ...storage], { env })
  expect(key.code).toBe(0)
  return {
    server,
    key: key.stdout.trim(),
    pending: async () =>
      (
        await queryOnce<{ id: string }>(database.url, 'SELECT id FROM pending_objects ORDER BY id')
      ).map((row) => row.id),
    async [Symbol.asyncDispose]() {
      await server.stop()
      await database[Symbol.asyncDispose]()
      dir[Symbol.dispose]()
    },
  }
}

/** A request's status and how long its answer took (capped at 15 s: no answer is a 0). */
async function timedCall(url: string, init: RequestInit) {
  const started = performance.now()
  const status = await Promise.race([
    fetch(url, init).then(async (response) => {
      await response.arrayBuffer()
      return response.status
    }),
    Bun.sleep(15_000).then(() => 0),
  ])
  return { status, ms: Math.round(performance.now() - started) }
}

const rawUpload = (body: string): RequestInit => ({
  method: 'POST',
  body,
  headers: { 'content-type': 'application/octet-stream' },
})

/** An upload roster writes to the bucket, then refuses for its fields. */
function refusedUploads(server: RunningBinary) {
  return {
    publicGarbage: () =>
      timedCall(`${server.url}/upload?filename=a.txt&public=garbage`, rawUpload('refused')),
    longDescription: () =>
      timedCall(`${server.url}/upload`, {
        method: 'POST',
        body: multipartBody([
          { name: 'file', filename: 'b.txt', data: 'refused too' },
          { name: 'description', data: 'd'.repeat(1001) },
        ]),
        headers: { 'content-type': multipartType() },
      }),
  }
}

async function uploadThenDelete(server: RunningBinary, key: string) {
  const created = await fetch(`${server.url}/upload?filename=c.txt`, {
    ...rawUpload('kept, then deleted'),
    headers: { 'content-type': 'application/octet-stream', 'x-api-key': key },
  })
  expect(created.status).toBe(201)
  const upload = (await created.json()) as { id: string; files: { id: string }[] }
  const deleted = await timedCall(`${server.url}/uploads/${upload.id}`, {
    method: 'DELETE',
    headers: { 'x-api-key': key },
  })
  return { deleted, fileId: upload.files[0]?.id as string }
}

const lackLines = (server: RunningBinary) =>
  server.stderr.filter((line) => line.includes('does not support'))

describe('roster (the compiled binary) on PostgreSQL with a bucket that lacks multipart clean-up', () => {
  test('answering 501 and 405 (stock s3rver): a refused upload and a DELETE answer at once; the lack is logged once; the objects still go', async () => {
    await using roster = await rosterOn(stock.endpoint, 'stock')
    const refused = refusedUploads(roster.server)
    const garbage = await refused.publicGarbage()
    const tooLong = await refused.longDescription()
    const { deleted } = await uploadThenDelete(roster.server, roster.key)
    // Measured before the fix: no answer to any of the three within 40 s.
    console.error(
      `stock s3rver: public=garbage ${garbage.status} in ${garbage.ms} ms; long description ${tooLong.status} in ${tooLong.ms} ms; DELETE ${deleted.status} in ${deleted.ms} ms`,
    )
    expect(garbage.status).toBe(422)
    expect(garbage.ms).toBeLessThan(PROMPT_MS)
    expect(tooLong.status).toBe(422)
    expect(tooLong.ms).toBeLessThan(PROMPT_MS)
    expect(deleted.status).toBe(200)
    expect(deleted.ms).toBeLessThan(PROMPT_MS)
    // The clean-ups ran after the answers: nothing is left in the bucket or pending.
    await until(async () => (await objectsUnder('stock', stock.endpoint)).length === 0)
    await until(async () => (await roster.pending()).length === 0)
    expect(lackLines(roster.server)).toHaveLength(1)
    expect(lackLines(roster.server)[0]).toContain('ListMultipartUploads')
  })

  test('holding them unanswered: the answers do not wait; what the clean-up could not finish stays pending for the sweep', async () => {
    await using standIn = startS3StandIn({ upstream: stock.endpoint, misbehaviour: 'hold' })
    // Past PROMPT_MS: an answer that waited for its clean-up would show.
    await using roster = await rosterOn(standIn.endpoint, 'held', { ROSTER_STORAGE_TIMEOUT: '3s' })
    const garbage = await refusedUploads(roster.server).publicGarbage()
    const { deleted, fileId } = await uploadThenDelete(roster.server, roster.key)
    console.error(
      `held clean-up: public=garbage ${garbage.status} in ${garbage.ms} ms; DELETE ${deleted.status} in ${deleted.ms} ms`,
    )
    expect(garbage.status).toBe(422)
    expect(garbage.ms).toBeLessThan(PROMPT_MS)
    expect(deleted.status).toBe(200)
    expect(deleted.ms).toBeLessThan(PROMPT_MS)
    // Both objects are deleted; listing their multipart uploads gets no answer within 3 s, so
    // both files stay listed as pending, for the sweep to finish once they are idle.
    await until(async () => standIn.caught === 2)
    await Bun.sleep(3500) // past the deadline: both clean-ups have given up
    expect(await roster.pending()).toHaveLength(2)
    expect(await roster.pending()).toContain(fileId)
    expect(await objectsUnder('held', stock.endpoint)).toEqual([])
    // Two deadlines missed are not yet a lack; a third in a row is, logged once.
    expect(lackLines(roster.server)).toEqual([])
    const third = await refusedUploads(roster.server).longDescription()
    expect(third.ms).toBeLessThan(PROMPT_MS)
    await until(async () => lackLines(roster.server).length === 1)
    await refusedUploads(roster.server).publicGarbage()
    await until(async () => (await roster.pending()).length === 2)
    expect(standIn.caught).toBe(3)
    expect(lackLines(roster.server)).toHaveLength(1)
  })
})
