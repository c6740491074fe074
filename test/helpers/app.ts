import { Database } from 'bun:sqlite'
import { expect } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { createApp } from '../../src/app'
import { type Config, testConfig } from '../../src/config'
import { type Deps, makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { ManualClock } from '../../src/timers'
import { freshDatabase } from './postgres'
import { freshStorage, objectsUnder } from './s3'

export type TestApp = Awaited<ReturnType<typeof makeTestApp>>

/** A temp directory removed on dispose. */
export function tempDir(prefix = 'roster-test-') {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

/**
 * The database tests run on: SQLite with uploads on disk (the default, `npm test`), or
 * PostgreSQL with uploads in S3 when ROSTER_TEST_BACKEND=postgres (`npm run test:postgres`),
 * each test on a fresh database and a prefix of its own in the bucket.
 */
export const TEST_BACKEND = process.env.ROSTER_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite'

/**
 * Where a test's data lives: a temp data dir, and on PostgreSQL a fresh database too. Both are
 * removed on dispose.
 */
export async function testData(overrides: Partial<Config> = {}) {
  const dir = tempDir()
  const database = TEST_BACKEND === 'postgres' ? await freshDatabase() : null
  const bucket = TEST_BACKEND === 'postgres' ? await freshStorage() : null
  const config = testConfig({
    dataDir: dir.path,
    databaseUrl: database?.url ?? null,
    storage: bucket?.storage ?? null,
    ...overrides,
  })
  return {
    config,
    dataDir: dir.path,
    /** The S3 variables when the test's uploads are in a bucket. */
    env: { ...process.env, ...bucket?.env },
    async [Symbol.asyncDispose]() {
      dir[Symbol.dispose]()
      await closeQueries(database?.url ?? null)
      await database?.[Symbol.asyncDispose]()
    },
  }
}

/**
 * A fresh app over a real database (a SQLite file in its own temp data dir, or a fresh
 * PostgreSQL database; see TEST_BACKEND). Use with `await using`, so the database is closed
 * and removed when the test ends.
 */
export async function makeTestApp(
  overrides: Partial<Config> = {},
  now?: (() => Date) | ManualClock,
) {
  const data = await testData(overrides)
  const log = memoryLogger()
  // A ManualClock drives the webhook worker's retries too: tests move it instead of sleeping.
  let deps: Deps
  try {
    deps =
      now instanceof ManualClock
        ? await makeDeps(data.config, log, now.date, {
            timers: now,
            env: data.env,
            turnReads: true,
          })
        : await makeDeps(data.config, log, now, { env: data.env, turnReads: true })
  } catch (error) {
    await data[Symbol.asyncDispose]()
    throw error
  }
  const app = createApp(deps)
  deps.webhooks.worker.start()
  deps.mail.worker.start()
  await deps.outbound.start()
  const call = (method: string, path: string, init: CallInit = {}) => send(app, method, path, init)
  return {
    app,
    deps,
    log,
    config: data.config,
    dataDir: data.dataDir,
    call,
    get: (path: string, init?: CallInit) => call('GET', path, init),
    post: (path: string, json: unknown, init?: CallInit) => call('POST', path, { json, ...init }),
    async [Symbol.asyncDispose]() {
      await deps.webhooks.worker.stop()
      await deps.mail.worker.stop()
      await deps.outbound.stop()
      await deps.close().catch(() => {})
      await data[Symbol.asyncDispose]()
    },
  }
}

/**
 * Runs SQL on a test's database directly, on either backend, over a connection of its own
 * (fixtures, and checks of what is stored). `?` placeholders; write counts as
 * `CAST(count(*) AS INTEGER)` so both return numbers. It waits a turn first, so SQLite's group
 * commit has committed what the test awaited before another connection writes.
 */
export async function dbQuery<T = Record<string, unknown>>(
  deps: Deps,
  text: string,
  ...params: unknown[]
): Promise<T[]> {
  const { databaseUrl } = deps.config
  if (databaseUrl !== null) {
    let sql = connections.get(databaseUrl)
    if (sql === undefined) {
      sql = new SQL(databaseUrl, { max: 1 })
      connections.set(databaseUrl, sql)
    }
    let n = 0
    return (await sql.unsafe(
      text.replace(/\?/g, () => `$${++n}`),
      params,
    )) as T[]
  }
  await new Promise((resolve) => setImmediate(resolve))
  const db = new Database(sqlitePath(deps), { strict: true })
  try {
    db.run('PRAGMA busy_timeout = 5000')
    return db.query(text).all(...(params as never[])) as T[]
  } finally {
    db.close()
    // Another connection's commit is seen by the app's reads from its next turn on (a client
    // could not ask sooner): wait for it, as a client would.
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** dbQuery's connection to each test database, closed with the test's data (testData). */
const connections = new Map<string, SQL>()

async function closeQueries(url: string | null): Promise<void> {
  if (url === null) return
  const sql = connections.get(url)
  connections.delete(url)
  await sql?.close()
}

/** Where a test's uploads are on disk (the default file store). */
export const uploadDirOf = (deps: Deps) => join(deps.config.dataDir, 'uploads')

/**
 * The files a test's store holds once the clean-ups under way have run, on either store:
 * `placed` (readable under their ids) and `pending` (streaming in, or left by a failure: on
 * disk in `.incoming`, in a bucket listed in `pending_objects`). Sorted. Throws when the upload
 * folder's `.incoming` is gone.
 */
export async function storedFiles(deps: Deps): Promise<{ placed: string[]; pending: string[] }> {
  await deps.uploadCleanups()
  const { storage } = deps.config
  if (storage === null) {
    return {
      placed: readdirSync(uploadDirOf(deps))
        .filter((name) => name !== '.incoming')
        .sort(),
      pending: readdirSync(join(uploadDirOf(deps), '.incoming')).sort(),
    }
  }
  const pending = new Set(
    (await dbQuery<{ id: string }>(deps, 'SELECT id FROM pending_objects')).map((row) => row.id),
  )
  const objects = await objectsUnder(storage.prefix)
  return {
    placed: objects.filter((id) => !pending.has(id)),
    pending: [...pending].sort(),
  }
}

/**
 * The SQLite file of a test's deps, for tests about the embedded database itself (its file, a
 * backup of it). Fails on PostgreSQL: such a test is listed as SQLite-only in
 * scripts/test-postgres.ts.
 */
export function sqlitePath(deps: Deps): string {
  if (deps.config.databaseUrl !== null) {
    throw new Error('this test is about the embedded SQLite database')
  }
  return join(deps.config.dataDir, 'roster.db')
}

export interface CallInit {
  json?: unknown
  body?: BodyInit
  headers?: Record<string, string>
}

export interface Reply {
  status: number
  headers: Headers
  /** Parsed JSON when the answer is JSON, else the text. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read into answers of many shapes.
  body: any
  text: string
}

/** One request through `app.handle`, answered with its parsed body. */
export async function send(
  app: { handle(request: Request): Promise<Response> },
  method: string,
  path: string,
  init: CallInit = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers }
  let body = init.body
  if (init.json !== undefined) {
    body = JSON.stringify(init.json)
    headers['content-type'] ??= 'application/json'
  }
  const response = await app.handle(
    new Request(`http://localhost${path}`, { method, headers, body }),
  )
  return readReply(response)
}

export async function readReply(response: Response): Promise<Reply> {
  const text = await textOf(response)
  // JSON and +json types; not JSON Lines (application/x-ndjson), which is many documents.
  const isJson = /^application\/(json|[^;]*\+json)\b/.test(
    response.headers.get('content-type') ?? '',
  )
  return {
    status: response.status,
    headers: response.headers,
    body: isJson && text !== '' ? JSON.parse(text) : text,
    text,
  }
}

/**
 * The answer's text; of an event stream (GET /events), which does not end, what its first read
 * gives, and the stream is cancelled.
 */
async function textOf(response: Response): Promise<string> {
  if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
    return response.text()
  }
  const reader = response.body?.getReader()
  if (reader === undefined) return ''
  const first = await reader.read()
  await reader.cancel()
  return first.done ? '' : new TextDecoder().decode(first.value)
}

/** Asserts the contract's error envelope and returns its `error`. */
export function expectEnvelope(reply: Reply, status: number, code: string) {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
  expect(reply.body.request_id).toBe(reply.headers.get('x-request-id') as string)
  expect(reply.body.error.documentation_url).toEndWith(`/docs/errors#${code}`)
  expect(Array.isArray(reply.body.error.details)).toBe(true)
  expect(reply.text).not.toMatch(/\bat .*\(.*:\d+:\d+\)|SQLITE|SELECT |INSERT |stack/i)
  return reply.body.error as {
    code: string
    message: string
    documentation_url: string
    details: { field: string; message: string; received?: string }[]
  }
}
