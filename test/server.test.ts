import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { testConfig } from '../src/config'
import { memoryLogger } from '../src/log'
import { type RunningServer, ServerStartError, startServer } from '../src/server'
import { tempDir } from './helpers/app'

async function withServer(
  run: (server: RunningServer, dir: string) => Promise<void>,
  overrides: Parameters<typeof testConfig>[0] extends infer C ? Partial<C> : never = {},
) {
  using dir = tempDir()
  const server = await startServer(
    testConfig({ dataDir: dir.path, logFile: join(dir.path, 'access.log'), ...overrides }),
    memoryLogger(),
  )
  try {
    await run(server, dir.path)
  } finally {
    await server.stop()
  }
}

describe('the listening server', () => {
  test('a 200 MB JSON body gets the 413 envelope, not Bun’s bare 413', async () => {
    await withServer(async (server) => {
      const body = new Uint8Array(200 * 1024 * 1024).fill(0x20)
      const response = await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      expect(response.status).toBe(413)
      const reply = (await response.json()) as { error: { code: string } }
      expect(reply.error.code).toBe('PAYLOAD_TOO_LARGE')
    })
  })

  test('a chunked JSON body over 1 MiB gets the 413 envelope', async () => {
    await withServer(async (server) => {
      const chunk = new Uint8Array(256 * 1024).fill(0x20)
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(chunk)
          sent += chunk.byteLength
          if (sent >= 4 * 1024 * 1024) controller.close()
        },
      })
      const response = await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      expect(response.status).toBe(413)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        'PAYLOAD_TOO_LARGE',
      )
    })
  })

  test('writes one JSON access-log line per request to --log-file, with no secrets', async () => {
    await withServer(async (server, dir) => {
      await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'log-check' },
        body: JSON.stringify({
          name: 'Ada',
          email: 'ada@example.com',
          password: 'sekrit-pass-123',
        }),
      })
      await fetch(`${server.url}/users/1?api_key=sekrit-key`)
      await fetch(`${server.url}/nope`)
      await server.stop()
      const lines = readFileSync(join(dir, 'access.log'), 'utf8').trim().split('\n')
      expect(lines).toHaveLength(3)
      const entries = lines.map((line) => JSON.parse(line))
      expect(entries[0]).toEqual({
        time: expect.any(String),
        request_id: 'log-check',
        method: 'POST',
        route: '/users',
        status: 201,
        ms: expect.any(Number),
        bytes: expect.any(Number),
      })
      expect(entries[1]).toMatchObject({ route: '/users/:id', status: 200 })
      expect(entries[2]).toMatchObject({ route: null, status: 404 })
      expect(lines.join('\n')).not.toMatch(/sekrit/)
    })
  })

  test('every kind of answer gets exactly one log line, and stop() does not wait for more', async () => {
    await withServer(async (server, dir) => {
      const u = server.url
      const requests: [string, RequestInit][] = [
        ['/users', { method: 'OPTIONS' }],
        [
          '/users',
          {
            method: 'OPTIONS',
            headers: { origin: 'https://a.test', 'access-control-request-method': 'POST' },
          },
        ],
        ['/nope', { method: 'OPTIONS' }],
        ['/users', { method: 'HEAD' }],
        ['/users', { method: 'DELETE' }],
        ['/users/1', { method: 'PROPFIND' }],
        ['/users', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }],
        [
          '/users',
          { method: 'POST', body: '{bad', headers: { 'content-type': 'application/json' } },
        ],
        ['/users/abc', {}],
        ['/docs', { redirect: 'manual' }],
        ['/swagger', {}],
        // Refused by an onRequest hook (the CSRF guard), before any route.
        [
          '/users',
          { method: 'POST', headers: { cookie: 'session=x', origin: 'https://evil.test' } },
        ],
      ]
      for (const [path, init] of requests) await fetch(`${u}${path}`, init)
      const started = performance.now()
      await server.stop()
      expect(performance.now() - started).toBeLessThan(1000)
      const entries = readFileSync(join(dir, 'access.log'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      expect(entries.map((e) => [e.method, e.route, e.status])).toEqual([
        ['OPTIONS', '/users', 204],
        ['OPTIONS', '/users', 204],
        ['OPTIONS', null, 404],
        ['HEAD', '/users', 200],
        ['DELETE', '/users', 405],
        ['PROPFIND', '/users/:id', 405],
        ['POST', '/users', 415],
        ['POST', '/users', 400],
        ['GET', '/users/:id', 404],
        ['GET', '/docs', 302],
        ['GET', '/swagger', 200],
        ['POST', '/users', 403],
      ])
      for (const entry of entries.filter((e) => e.status >= 400)) {
        expect(entry.bytes).toBeGreaterThan(100)
      }
      const metrics = server.deps.metrics.http
      expect(metrics.count('/users', 'POST', 403)).toBe(1)
      expect(metrics.count('/users', 'POST', 400)).toBe(1)
    })
  })

  test('stop() lets an in-flight request finish, then refuses new ones', async () => {
    await withServer(async (server) => {
      const slow = fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // argon2id hashing keeps this request busy for a while
        body: JSON.stringify({ name: 'Ada', email: 'ada@example.com', password: 'long enough pw' }),
      })
      await Bun.sleep(20)
      const stopped = server.stop()
      expect((await slow).status).toBe(201)
      await stopped
      expect(fetch(`${server.url}/health`)).rejects.toThrow()
    })
  })

  test('a port in use is a ServerStartError with one clear line', async () => {
    await withServer(async (server) => {
      using other = tempDir()
      await expect(
        startServer(testConfig({ dataDir: other.path, port: server.port }), memoryLogger()),
      ).rejects.toThrow(new ServerStartError(`port ${server.port} on 127.0.0.1 is already in use`))
    })
  })

  test('a Host header with hostile characters does not reach documentation_url', async () => {
    await withServer(async (server) => {
      const response = await fetch(`${server.url}/nope`, {
        headers: { host: 'evil.test"><script>' },
      })
      const text = await response.text()
      expect(text).not.toContain('<script>')
      // The answer is the envelope, its link on a host of plain name characters.
      expect(response.status).toBe(404)
      const body = JSON.parse(text) as { error: { code: string; documentation_url: string } }
      expect(body.error.code).toBe('NOT_FOUND')
      expect(body.error.documentation_url).toMatch(
        /^http:\/\/[a-z0-9.-]+(:\d+)?\/docs\/errors#NOT_FOUND$/,
      )
    })
  })
})
