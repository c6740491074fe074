import { expect } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/app'
import { type Config, testConfig } from '../../src/config'
import { type Deps, makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { ManualClock } from '../../src/timers'

export type TestApp = ReturnType<typeof makeTestApp>

/** A temp directory removed on dispose. */
export function tempDir(prefix = 'roster-test-') {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

/**
 * A fresh app over a real SQLite file in its own temp data dir. Use with `using`, so the
 * database is closed and the directory removed when the test ends.
 */
export function makeTestApp(overrides: Partial<Config> = {}, now?: (() => Date) | ManualClock) {
  const dir = tempDir()
  const log = memoryLogger()
  const config = testConfig({ dataDir: dir.path, ...overrides })
  // A ManualClock drives the webhook worker's retries too: tests move it instead of sleeping.
  const deps: Deps =
    now instanceof ManualClock
      ? makeDeps(config, log, now.date, { timers: now })
      : makeDeps(config, log, now)
  const app = createApp(deps)
  deps.webhooks.worker.start()
  const call = (method: string, path: string, init: CallInit = {}) => send(app, method, path, init)
  return {
    app,
    deps,
    log,
    dataDir: dir.path,
    call,
    get: (path: string, init?: CallInit) => call('GET', path, init),
    post: (path: string, json: unknown, init?: CallInit) => call('POST', path, { json, ...init }),
    [Symbol.dispose]() {
      void deps.webhooks.worker.stop()
      try {
        deps.close()
      } catch {}
      dir[Symbol.dispose]()
    },
  }
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
  const text = await response.text()
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
