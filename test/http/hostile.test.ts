// Property-style hostile input: generated requests (seeded; ROSTER_HOSTILE_SEED replays one,
// ROSTER_HOSTILE_RUNS sets how many) at every route with every method. Whatever comes in:
// never a 5xx, always the error envelope with the request id, no stack trace or SQL, nothing
// in the database or the upload directory changed by a refused write, no polluted prototype.

import { describe, expect, test } from 'bun:test'
import type { Deps } from '../../src/deps'
import { dbQuery, makeTestApp, readReply, storedFiles, type TestApp } from '../helpers/app'
import { apiKey, PASSWORD } from '../helpers/auth'
import { multipartBody, multipartType } from '../helpers/multipart'
import { DocumentChecker, isScimError, type OpenApiDoc } from '../helpers/openapi'
import { STRIPE_SECRET } from '../helpers/webhooks'

/** What Object.prototype holds before any request: no request may add to it. */
const OBJECT_PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype)
const RUNS = Number(process.env.ROSTER_HOSTILE_RUNS ?? 2500)
const SEED = Number(process.env.ROSTER_HOSTILE_SEED ?? Date.now() % 1_000_000)

function prng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T
  return { next, int, pick, chance: (p: number) => next() < p }
}
type Random = ReturnType<typeof prng>

const EDGE_STRINGS = [
  '',
  ' ',
  '0',
  '-1',
  '1e309',
  '9007199254740993',
  '-0',
  'NaN',
  'Infinity',
  '0x1f',
  '1.5',
  '__proto__',
  'constructor',
  'prototype',
  "' OR 1=1 --",
  '1; DROP TABLE users; --',
  "%' AND 1=CAST((SELECT sqlite_version()) AS INT) --",
  '"); DELETE FROM users; --',
  '../../../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  '<script>alert(1)</script>',
  '%s%s%s%n',
  '\u0024{7*7}{{7*7}}',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '\u202Eevil\u202C',
  'invoice\u202efdp.exe',
  '\u2066isolate\u2069',
  '\ufeffbom',
  'ad\u2060min',
  '\u200B\u200B',
  'e\u0301\u0301\u0301',
  '😀👨‍👩‍👧‍👦',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'Ω≈ç√∫˜µ≤≥÷',
  '\t\n\r\u000b\u000c',
  'admin@example.com',
  'ADA@EXAMPLE.COM',
  'a@b',
  '@',
  'true',
  'null',
  '[]',
  '{}',
]

function randomString(r: Random): string {
  switch (r.int(5)) {
    case 0:
      return r.pick(EDGE_STRINGS)
    case 1:
      return String.fromCharCode(...Array.from({ length: r.int(40) }, () => r.int(0x10000)))
    case 2:
      return String.fromCharCode(...Array.from({ length: r.int(40) }, () => r.int(256)))
    case 3:
      return r.pick(EDGE_STRINGS).repeat(1 + r.int(300))
    default:
      return r.chance(0.1)
        ? 'x'.repeat(1024 * 1024 + r.int(10))
        : `${r.pick(EDGE_STRINGS)}${r.int(1e6)}`
  }
}

function randomValue(r: Random, depth = 0): unknown {
  switch (r.int(depth > 3 ? 6 : 9)) {
    case 0:
      return randomString(r)
    case 1:
      return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, Number.MIN_VALUE])
    case 2:
      return r.pick([true, false, null])
    case 3:
      return randomString(r)
    case 4:
      return r.int(1000)
    case 5:
      return []
    case 6:
      return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1))
    default:
      return randomObject(r, depth + 1)
  }
}

const FIELDS = [
  'name',
  'email',
  'password',
  'current_password',
  'pass',
  'username',
  'login',
  'id',
  'type',
  'data',
  'description',
  'public',
  'created_at',
  '__proto__',
  'constructor',
  'prototype',
  'admin',
]

function randomObject(r: Random, depth = 0): Record<string, unknown> {
  const object: Record<string, unknown> = {}
  for (let i = r.int(5); i > 0; i--) {
    const key = r.chance(0.8) ? r.pick(FIELDS) : randomString(r).slice(0, 50)
    Object.defineProperty(object, key, {
      value: randomValue(r, depth),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return object
}

function randomJsonText(r: Random): string | Uint8Array<ArrayBuffer> {
  switch (r.int(10)) {
    case 8:
      // Invalid UTF-8 inside an otherwise valid body.
      return new Uint8Array(
        Buffer.concat([
          Buffer.from('{"name":"A'),
          Buffer.from([0xff, 0xfe, 0xc0, 0x80]),
          Buffer.from(`B","email":"u${r.int(1e9)}@example.com"}`),
        ]),
      )
    case 9:
      // A key given twice, at the top or nested.
      return r.chance(0.5)
        ? `{"name":"A","email":"a${r.int(1e9)}@example.com","email":"b@example.com"}`
        : '{"name":"A","email":"c@example.com","x":{"y":1,"y":2}}'
    case 0:
      return `${'['.repeat(50_000)}${']'.repeat(50_000)}`
    case 1:
      return `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`
    case 2:
      return '{"name": "dup", "name": {"__proto__": {"admin": true}}, "email": "x@example.com"}'
    case 3:
      return randomString(r)
    case 4:
      return JSON.stringify(randomValue(r))
    default:
      return JSON.stringify({
        name: r.chance(0.5) ? randomString(r) : 'Valid Name',
        email: r.chance(0.5) ? randomString(r) : `ok${r.int(1e9)}@example.com`,
        ...randomObject(r),
      })
  }
}

/** Path segments as a raw client could send them, lone surrogates and all. */
function encodeSegment(text: string): string {
  let out = ''
  for (const char of text) {
    try {
      out += encodeURIComponent(char)
    } catch {
      out += '%ED%A0%80'
    }
  }
  return out
}

/** A header value as a raw client would put it on the wire (UTF-8 bytes read as latin1). */
function headerValue(text: string): string {
  return Buffer.from(text, 'utf8')
    .toString('latin1')
    .replace(/[\r\n\0]/g, '')
    .slice(0, 4000)
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=latin1',
  'application/json; charset="iso-8859-1"',
  'application/json; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'text/plain',
  'application/xml',
  'application/octet-stream',
  '',
  'application/json, text/html',
]

interface Fixture {
  t: TestApp
  key: string
  userId: number
  uploadId: string
  fileId: string
}

function buildRequest(r: Random, fx: Fixture, routes: { method: string; path: string }[]) {
  const route = r.pick(routes)
  const method = r.chance(0.75)
    ? route.method
    : r.pick(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
  const ids: Record<string, string> = {
    users: String(fx.userId),
    uploads: fx.uploadId,
    files: fx.fileId,
    'api-keys': '1',
  }
  const path = route.path.replace(/:id/, () => {
    const kind = route.path.split('/').at(-2) ?? 'users'
    if (r.chance(0.4)) return ids[kind] ?? '1'
    // Malformed percent-escapes reach a route's params as null, whatever their type says.
    if (r.chance(0.1)) return r.pick(['%', '%ZZ', '%E0%A4%A', '%C0%AF', '%00', '%ED%A0%80x'])
    return encodeSegment(randomString(r).slice(0, 200))
  })
  const query: string[] = []
  for (let i = r.int(4); i > 0; i--) {
    const name = r.pick([
      'limit',
      'offset',
      'cursor',
      'q',
      'email',
      'api_key',
      'filename',
      'public',
      'description',
      'filter[__proto__]',
      'constructor[prototype][admin]',
      '__proto__.admin',
      randomString(r).slice(0, 20),
    ])
    query.push(`${encodeSegment(name)}=${encodeSegment(randomString(r).slice(0, 300))}`)
  }
  const headers: Record<string, string> = {}
  const secretish = () => randomString(r).slice(0, 300)
  if (r.chance(0.3)) {
    headers.authorization = headerValue(
      r.pick([
        `Bearer ${secretish()}`,
        `Basic ${Buffer.from(`${secretish()}:${secretish()}`).toString('base64')}`,
        `Basic ${secretish()}`,
        secretish(),
      ]),
    )
  }
  if (r.chance(0.2)) headers['x-api-key'] = r.chance(0.3) ? fx.key : headerValue(secretish())
  if (r.chance(0.15)) headers.cookie = headerValue(`session=${secretish()}`)
  for (const name of [
    'if-match',
    'if-none-match',
    'idempotency-key',
    'x-request-id',
    'range',
    'origin',
    'x-forwarded-for',
    'content-disposition',
    'stripe-signature',
    'webhook-signature',
    'x-hub-signature-256',
  ]) {
    if (r.chance(0.06)) headers[name] = headerValue(randomString(r))
  }
  let body: BodyInit | undefined
  if (method !== 'GET' && method !== 'HEAD' && r.chance(0.85)) {
    const type = r.pick(CONTENT_TYPES)
    if (type !== '') headers['content-type'] = type
    if (type.startsWith('multipart') && r.chance(0.6)) {
      headers['content-type'] = multipartType()
      body = multipartBody(
        Array.from({ length: 1 + r.int(3) }, () => ({
          name: r.pick(['file', 'description', 'public', randomString(r).slice(0, 30)]),
          filename: r.chance(0.6) ? randomString(r).slice(0, 300) : undefined,
          data: randomString(r).slice(0, 5000),
        })),
      )
    } else if (type === 'application/x-www-form-urlencoded') {
      body = Object.entries(randomObject(r))
        .map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(String(v))}`)
        .join('&')
    } else {
      body = r.chance(0.5) ? randomJsonText(r) : randomString(r)
    }
  }
  // Now and then a Host that is not roster's (DNS rebinding): 421 while /users is open.
  const base = r.chance(0.05)
    ? r.pick([
        'http://rebind.attacker.example',
        'http://127.0.0.1:8080',
        'http://[::1]',
        'http://x',
      ])
    : 'http://localhost'
  const target = `${path}${query.length > 0 ? `?${query.join('&')}` : ''}`
  return { method, path: target, base, headers, body }
}

/**
 * Every table's rows (the users' count and search index aside: they are the users' rows
 * again, and PostgreSQL's count folds its deltas in the background whatever the request;
 * api_keys.last_used_at aside: using a key is not a write; and the
 * shared database's log of failed sign-ins and the audit log's login.failed and login.locked
 * events, which a refused sign-in is meant to add to).
 */
const SIGN_IN_REFUSALS = new Set(['login.failed', 'login.locked'])

async function fingerprint(deps: Deps): Promise<string> {
  // A refused upload's clean-up runs after its answer (its pending rows go then): wait for it.
  await deps.uploadCleanups()
  const onPostgres = deps.config.databaseUrl !== null
  const tables = await dbQuery<{ name: string }>(
    deps,
    onPostgres
      ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT IN ('login_failures', 'user_count', 'user_count_deltas') ORDER BY 1"
      : // The search index and the name order are derived from users, which are compared.
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('sqlite_sequence', 'users_name_order') AND name NOT LIKE 'users\\_search%' ESCAPE '\\' ORDER BY name",
  )
  const hasher = new Bun.CryptoHasher('sha256')
  for (const { name } of tables) {
    const order = onPostgres ? 'ORDER BY t::text' : 'ORDER BY rowid'
    for (const row of await dbQuery(deps, `SELECT * FROM "${name}" t ${order}`)) {
      const copy = { ...(row as Record<string, unknown>) }
      if (name === 'api_keys') delete copy.last_used_at
      if (name === 'audit_events' && SIGN_IN_REFUSALS.has(String(copy.action))) continue
      hasher.update(`${name}:${JSON.stringify(copy)}\n`)
    }
  }
  return hasher.digest('hex')
}

async function filesIn(deps: Deps): Promise<number> {
  const files = await storedFiles(deps)
  return files.placed.length + files.pending.length
}

const LEAKS =
  /\bat [^\n]*:\d+:\d+|SQLITE_|node_modules|\.ts:\d+|TypeError|RangeError|SyntaxError|password_hash|\$argon2/

describe('hostile input, generated', () => {
  test(`${RUNS} generated requests at every route and method (seed ${SEED})`, async () => {
    await using t = await makeTestApp({ webhookSecrets: [STRIPE_SECRET] })
    const created = await t.post('/users', {
      name: 'Ada',
      email: 'ada@example.com',
      password: PASSWORD,
    })
    const key = await apiKey(t)
    const upload = await t.call('POST', '/upload?filename=a.txt', {
      body: 'hello',
      headers: { 'content-type': 'application/octet-stream' },
    })
    const fx: Fixture = {
      t,
      key,
      userId: created.body.id,
      uploadId: upload.body.id,
      fileId: upload.body.files[0].id,
    }
    const routes = t.app.routes
      .filter((route) => route.path !== '/*' && route.method !== 'ALL')
      .map((route) => ({ method: route.method, path: route.path }))
    const documented = new DocumentChecker((await t.get('/swagger/json')).body as OpenApiDoc)
    const r = prng(SEED)
    const failures: unknown[] = []
    const statuses = new Map<number, number>()
    for (let run = 0; run < RUNS && failures.length < 5; run++) {
      const request = buildRequest(r, fx, routes)
      const isWrite = !['GET', 'HEAD', 'OPTIONS'].includes(request.method)
      const before = isWrite ? await fingerprint(t.deps) : ''
      const filesBefore = await filesIn(t.deps)
      const reply = await readReply(
        await t.app.handle(
          new Request(`${request.base}${request.path}`, {
            method: request.method,
            headers: request.headers,
            body: request.body,
          }),
        ),
      )
      statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1)
      const problems: string[] = []
      const requestId = reply.headers.get('x-request-id')
      if (reply.status >= 500) problems.push(`status ${reply.status}`)
      if (requestId === null || !/^[A-Za-z0-9._-]{1,128}$/.test(requestId)) {
        problems.push(`bad X-Request-Id ${JSON.stringify(requestId)}`)
      }
      if (reply.status >= 400 && reply.text !== '' && request.method !== 'HEAD') {
        const body = reply.body
        if (isScimError(request.path, body)) {
          if (body.status !== String(reply.status)) problems.push('SCIM error with another status')
        } else if (
          typeof body !== 'object' ||
          typeof body?.error?.code !== 'string' ||
          typeof body.error.message !== 'string' ||
          !Array.isArray(body.error.details) ||
          !String(body.error.documentation_url).endsWith(`/docs/errors#${body.error.code}`) ||
          body.request_id !== requestId
        ) {
          problems.push('not the error envelope')
        }
      }
      // (The docs assets are JavaScript and mention errors by name; answers are JSON.)
      const isJson = reply.headers.get('content-type')?.startsWith('application/json') === true
      if (isJson && LEAKS.test(reply.text)) problems.push(`leak: ${reply.text.match(LEAKS)?.[0]}`)
      // Every answer, success or error, is what the document says for its route and status.
      const undocumented = documented.check(request.method, request.path, {
        status: reply.status,
        contentType: reply.headers.get('content-type'),
        body: reply.body,
      })
      if (undocumented !== null) problems.push(`document: ${undocumented}`)
      if (isWrite && reply.status >= 400) {
        if ((await fingerprint(t.deps)) !== before)
          problems.push('a refused write changed the database')
        if ((await filesIn(t.deps)) !== filesBefore) problems.push('a refused write left files')
      }
      if (problems.length > 0) {
        failures.push({
          run,
          seed: SEED,
          method: request.method,
          path: request.path.slice(0, 300),
          headers: Object.fromEntries(
            Object.entries(request.headers).map(([k, v]) => [k, v.slice(0, 100)]),
          ),
          body: typeof request.body === 'string' ? request.body.slice(0, 300) : typeof request.body,
          status: reply.status,
          answer: reply.text.slice(0, 300),
          problems,
        })
      }
    }
    if (process.env.ROSTER_HOSTILE_VERBOSE) {
      console.log(JSON.stringify([...statuses].sort()))
      console.log(t.log.lines.filter((line) => line.includes('"error"')).join(''))
    }
    expect(failures).toEqual([])
    expect(({} as Record<string, unknown>).admin).toBeUndefined()
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(OBJECT_PROTOTYPE_NAMES)
    // The generator reached deep enough to get past parsing and authentication often.
    if (RUNS >= 1000)
      expect([...statuses.keys()].sort()).toEqual(
        expect.arrayContaining([200, 400, 401, 404, 405, 415, 421, 422]),
      )
    // Nothing the generator did broke the service.
    expect((await t.get('/health')).status).toBe(200)
  }, 120_000)
})

/** Sends raw bytes and returns whatever comes back before the server closes or 1 s passes. */
async function raw(port: number, bytes: string): Promise<string> {
  const { connect } = await import('node:net')
  return await new Promise((resolve) => {
    let answer = ''
    const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(bytes, 'latin1')))
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => {
      answer += chunk
    })
    const done = () => resolve(answer)
    socket.on('close', done)
    socket.on('error', done)
    setTimeout(() => {
      socket.destroy()
      done()
    }, 1000)
  })
}

describe('hostile input on the wire', () => {
  test('header injection, smuggling and garbage: no 5xx, nothing injected into the answer, still serving', async () => {
    const { startServer } = await import('../../src/server')
    const { testConfig } = await import('../../src/config')
    const { memoryLogger } = await import('../../src/log')
    const { tempDir } = await import('../helpers/app')
    using dir = tempDir()
    const server = await startServer(testConfig({ dataDir: dir.path }), memoryLogger())
    try {
      const cases = [
        'GET /users HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: abc\r\n folded: continuation\r\nConnection: close\r\n\r\n',
        'GET /users HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: a\x00b\x7f\r\nConnection: close\r\n\r\n',
        'GET /users HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: a%0d%0aSet-Cookie:%20injected=1\r\nConnection: close\r\n\r\n',
        'GET /users/1%0d%0aSet-Cookie:%20injected=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
        'GET /users/%0d%0a HTTP/1.1\r\nHost: evil.example\r\n\tInjected: yes\r\nConnection: close\r\n\r\n',
        'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{"a":1}',
        'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /users HTTP/1.1\r\nHost: localhost\r\n\r\n',
        // Content-Length frames the body: one that ends early creates nothing, and a declared
        // length shorter than the JSON cuts it there (400; the rest is not a request).
        'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"name":"Cut","email":"cut@example.com"}',
        'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"name":"Cut","email":"cut@example.com"}',
        `GET /users HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(70_000)}\r\nConnection: close\r\n\r\n`,
        // Bun answers an unknown protocol version 505 itself, as it should.
        'GET /users HTTP/9.9\r\nHost: localhost\r\nConnection: close\r\n\r\n',
        '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n',
        'GET\r\n\r\n',
        `GET /${'a/'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      ]
      for (const bytes of cases) {
        const answer = await raw(server.port, bytes)
        const statusLine = answer.split('\r\n')[0] ?? ''
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0)
        expect({
          request: bytes.slice(0, 60),
          serverError: status >= 500 && !bytes.includes('HTTP/9.9'),
        }).toEqual({
          request: bytes.slice(0, 60),
          serverError: false,
        })
        const head = answer.split('\r\n\r\n')[0] ?? ''
        expect(head).not.toMatch(/^set-cookie: injected|^injected:/im)
        const echoed = /^x-request-id: (.*)$/im.exec(head)?.[1]
        if (echoed !== undefined) expect(echoed).toMatch(/^[A-Za-z0-9._-]{1,128}$/)
      }
      const health = await fetch(`${server.url}/health`)
      expect(health.status).toBe(200)
      expect(await server.deps.users.count()).toBe(0)
    } finally {
      await server.stop()
    }
  })
})
