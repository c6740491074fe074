// The floor for the contract's per-request work: raw Bun.serve + bun:sqlite, no framework, doing
// on GET /health and GET /users/{id} only what every roster answer must do, as cheaply as we
// know how. It shows what the contract costs by itself, apart from Elysia and roster's code:
// - X-Request-Id: the caller's when it is 1–128 of [A-Za-z0-9._-] (so the request's headers
//   are read), else a new `req_…` id; API-Version; CORS allow-origin and expose-headers;
//   Content-Type with charset and Content-Length;
// - GET /users/{id}: an id that is not a safe integer is 404 without a query; ETag from the
//   row version; If-None-Match answers 304;
// - /metrics data: a count per route and status, and the duration histogram;
// - the access log: one JSON line per request, formatted on the request path and written to a
//   file once per event-loop turn;
// - /health's checks at most once a second, as roster runs them.
// Usage: bun bench/floor.ts <db-path> <port> <access-log-path>
import { Database } from 'bun:sqlite'
import { openSync } from 'node:fs'

const [dbPath = 'floor.db', portText = '0', logPath = 'floor-access.log'] = process.argv.slice(2)
const db = new Database(dbPath, { create: true, strict: true })
db.run('PRAGMA journal_mode = WAL')
db.run('PRAGMA synchronous = NORMAL')
db.run(`CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1)`)

interface Row {
  id: number
  name: string
  email: string
  created_at: string
  updated_at: string
  version: number
}
const ping = db.query('SELECT count(*) FROM users')
const byId = db.query<Row, [number]>(
  'SELECT id, name, email, created_at, updated_at, version FROM users WHERE id = ?',
)

const EXPOSED =
  'api-version, etag, idempotent-replayed, link, location, ratelimit-limit, ratelimit-policy, ratelimit-remaining, ratelimit-reset, retry-after, x-request-id, x-total-count'
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/
const ID = /^[1-9][0-9]{0,15}$/
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

let sequence = 0
function requestId(request: Request): string {
  const given = request.headers.get('x-request-id')
  if (given !== null && REQUEST_ID.test(given)) return given
  sequence += 1
  return `req_floor${sequence.toString(36)}`
}

const answers = new Map<string, number>()
const histogram = new Float64Array(BUCKETS.length + 1)
const log = Bun.file(openSync(logPath, 'a')).writer()
let pending = ''
let scheduled = false
let lastMs = 0
let lastIso = ''
const drain = () => {
  scheduled = false
  const text = pending
  pending = ''
  if (text !== '') log.write(text)
}

function observe(begun: number, id: string, route: string, status: number, bytes: number): void {
  const ms = performance.now() - begun
  const key = `GET ${route} ${status}`
  answers.set(key, (answers.get(key) ?? 0) + 1)
  let bucket = 0
  while (bucket < BUCKETS.length && ms / 1000 > (BUCKETS[bucket] as number)) bucket++
  histogram[bucket] = (histogram[bucket] as number) + 1
  const at = Date.now()
  if (at !== lastMs) {
    lastMs = at
    lastIso = new Date(at).toISOString()
  }
  pending += `{"time":"${lastIso}","request_id":"${id}","method":"GET","route":"${route}","status":${status},"ms":${Math.round(ms * 100) / 100},"bytes":${bytes}}\n`
  if (!scheduled) {
    scheduled = true
    setImmediate(drain)
  }
}

function answer(text: string, status: number, id: string, etag?: string): Response {
  const headers: Record<string, string> = {
    'access-control-expose-headers': EXPOSED,
    'access-control-allow-origin': '*',
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'x-request-id': id,
    'api-version': '1',
  }
  if (etag !== undefined) headers.etag = etag
  return new Response(text, { status, headers })
}

const startedAt = Date.now()
let checkedAt = 0
let databaseOk = true
const server = Bun.serve({
  port: Number(portText),
  hostname: '127.0.0.1',
  routes: {
    '/health': (request) => {
      const begun = performance.now()
      const id = requestId(request)
      const now = Date.now()
      if (now - checkedAt >= 1000) {
        checkedAt = now
        databaseOk = ping.get() !== null
      }
      const text = JSON.stringify({
        status: databaseOk ? 'ok' : 'unavailable',
        version: '0.1.0',
        uptime_s: Math.floor((now - startedAt) / 1000),
        checks: { database: databaseOk ? 'ok' : 'failing', storage: 'ok' },
      })
      observe(begun, id, '/health', 200, text.length)
      return answer(text, 200, id)
    },
    '/users/:id': (request) => {
      const begun = performance.now()
      const id = requestId(request)
      const raw = request.params.id
      const user =
        ID.test(raw) && Number(raw) <= Number.MAX_SAFE_INTEGER ? byId.get(Number(raw)) : null
      if (user === null) {
        const text = `{"error":{"code":"NOT_FOUND","message":"No user with this id"},"request_id":"${id}"}`
        observe(begun, id, '/users/:id', 404, text.length)
        return answer(text, 404, id)
      }
      const etag = `"${user.id}.${user.version}"`
      if (request.headers.get('if-none-match') === etag) {
        observe(begun, id, '/users/:id', 304, 0)
        return new Response(null, { status: 304, headers: { etag, 'x-request-id': id } })
      }
      const text = JSON.stringify({
        id: user.id,
        name: user.name,
        email: user.email,
        created_at: user.created_at,
        updated_at: user.updated_at,
      })
      observe(begun, id, '/users/:id', 200, text.length)
      return answer(text, 200, id, etag)
    },
  },
  fetch: () => new Response('{"error":{"code":"NOT_FOUND"}}', { status: 404 }),
})
console.log(`floor listening on ${server.url}`)
