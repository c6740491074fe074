import { describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { testConfig } from '../../src/config'
import { hostnameOf } from '../../src/http/host-guard'
import { memoryLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { expectEnvelope, makeTestApp, readReply, tempDir } from '../helpers/app'

/** A request as the browser of a DNS-rebinding page sends it: its own name in Host. */
async function withHost(
  t: { app: { handle(r: Request): Promise<Response> } },
  host: string,
  path = '/users',
) {
  return readReply(await t.app.handle(new Request(`http://${host}${path}`)))
}

describe('open mode answers only loopback names and the --public-url host (421 otherwise)', () => {
  test('a foreign Host is 421 MISDIRECTED_REQUEST on every route, before anything runs', async () => {
    await using t = await makeTestApp({ usersAccess: 'open' })
    for (const path of ['/users', '/v2/users/1', '/login', '/health', '/nowhere']) {
      const reply = await withHost(t, 'rebind.attacker.example:8080', path)
      expectEnvelope(reply, 421, 'MISDIRECTED_REQUEST')
    }
    const write = await t.app.handle(
      new Request('http://rebind.attacker.example/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'M', email: 'm@example.com' }),
      }),
    )
    expect(write.status).toBe(421)
    expect((await t.get('/users')).body.pagination.total).toBe(0)
  })

  test('localhost, 127.0.0.0/8 and [::1], with or without a port, are answered', async () => {
    await using t = await makeTestApp({ usersAccess: 'open' })
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1:9', '127.1.2.3', '[::1]:8080']) {
      expect((await withHost(t, host)).status).toBe(200)
    }
  })

  test('the --public-url host is answered too', async () => {
    await using t = await makeTestApp({
      usersAccess: 'open',
      publicUrl: 'https://roster.example.com',
    })
    expect((await withHost(t, 'roster.example.com')).status).toBe(200)
    expect((await withHost(t, 'roster.example.com:443')).status).toBe(200)
    expect((await withHost(t, 'other.example.com')).status).toBe(421)
  })

  test('protected mode answers any Host (a credential is what lets a request in)', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const reply = await withHost(t, 'roster.internal:8080')
    expectEnvelope(reply, 401, 'UNAUTHORIZED')
  })

  test('hostnameOf reads the host name without the port', () => {
    expect(hostnameOf('http://a.example:80/x')).toBe('a.example')
    expect(hostnameOf('http://[::1]:8080/x?y')).toBe('[::1]')
    expect(hostnameOf('http://localhost')).toBe('localhost')
  })
})

describe('a request without a Host header (HTTP/1.0, a balancer health check)', () => {
  test('is answered in open mode, routed and labelled by its path', async () => {
    using dir = tempDir()
    const server = await startServer(testConfig({ dataDir: dir.path }), memoryLogger())
    try {
      const raw = (request: string) =>
        new Promise<string>((resolve) => {
          const socket = connect(server.port, '127.0.0.1', () => socket.write(request))
          let text = ''
          socket.on('data', (data) => {
            text += data.toString()
          })
          socket.on('close', () => resolve(text))
        })
      const health = await raw('GET /health HTTP/1.0\r\n\r\n')
      expect(health).toStartWith('HTTP/1.1 200')
      const v2 = await raw('GET /v2/users HTTP/1.0\r\n\r\n')
      expect(v2).toStartWith('HTTP/1.1 200')
      expect(v2.toLowerCase()).toContain('api-version: 2')
    } finally {
      await server.stop()
    }
  })
})
