import { describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { SYSTEM } from '../../../src/audit/events'
import type { Deps } from '../../../src/deps'
import { memoryLogger } from '../../../src/log'
import { startServer } from '../../../src/server'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp, testData } from '../../helpers/app'
import { apiKey, form, PASSWORD, signedIn } from '../../helpers/auth'
import { SseReader } from '../../helpers/sse'
import { slowLink } from '../../helpers/wire'

/** A stream of /events, once the hub has it (its first read of the feed done). */
function subscribe(t: TestApp, key: string, path = '/events', headers = {}) {
  return subscribeWith(t, { 'x-api-key': key, ...headers }, path)
}

async function subscribeWith(t: TestApp, headers: Record<string, string>, path = '/events') {
  const before = t.deps.feed.size
  const response = await t.app.handle(new Request(`http://localhost${path}`, { headers }))
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  expect(response.headers.get('cache-control')).toBe('no-store')
  const reader = new SseReader(response.body as ReadableStream<Uint8Array>)
  expect(await reader.next()).toEqual({ retry: '3000' })
  for (let tries = 0; tries < 500 && t.deps.feed.size === before; tries++) await Bun.sleep(2)
  return reader
}

/** Ada (made by signedIn) signs in once more: a new token and a new session. */
async function signedInAgain(t: TestApp) {
  const login = await t.call(
    'POST',
    '/login',
    form({ email: 'ada@example.com', password: PASSWORD }),
  )
  expect(login.status).toBe(200)
  return {
    token: login.body.access_token as string,
    cookie: (login.headers.get('set-cookie') ?? '').split(';', 1)[0] as string,
  }
}

const makeUser = (t: TestApp, key: string, name: string) =>
  t.post('/users', { name, email: `${name}@example.com` }, { headers: { 'x-api-key': key } })

describe('GET /events', () => {
  test('what happens next arrives in commit order, each event once with its place as id', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    await makeUser(t, key, 'before')
    const stream = await subscribe(t, key)
    for (const name of ['ann', 'bo', 'cy']) await makeUser(t, key, name)
    const events = await stream.events(3)
    expect(events.map(({ event }) => event.action)).toEqual([
      'user.created',
      'user.created',
      'user.created',
    ])
    expect(events.map(({ event }) => event.target.id)).toEqual(['2', '3', '4'])
    const ids = events.map(({ id }) => id)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(3)
    const listed = await t.get('/audit?limit=3', { headers: { 'x-api-key': key } })
    expect(events.map(({ event }) => event).reverse()).toEqual(listed.body.data)
    await stream.cancel()
  })

  test('Last-Event-ID resumes right after that event, as a header or a parameter', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const first = await subscribe(t, key)
    for (const name of ['a', 'b', 'c', 'd']) await makeUser(t, key, name)
    const seen = await first.events(4)
    await first.cancel()
    const resumed = await subscribe(t, key, '/v2/events', { 'last-event-id': seen[1]?.id })
    const again = await resumed.events(2)
    expect(again).toEqual(seen.slice(2))
    await makeUser(t, key, 'e')
    expect((await resumed.events(1))[0]?.event.target.id).toBe('5')
    await resumed.cancel()
    const byQuery = await subscribe(t, key, `/events?last_event_id=${seen[2]?.id}`)
    expect((await byQuery.events(2)).map(({ event }) => event.target.id)).toEqual(['4', '5'])
    await byQuery.cancel()
  })

  test('types keeps only those actions or kinds', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const stream = await subscribe(t, key, '/events?types=group.*,user.deleted')
    await makeUser(t, key, 'ann')
    await t.post('/groups', { name: 'Ops' }, { headers: { 'x-api-key': key } })
    await t.call('DELETE', '/users/1', { headers: { 'x-api-key': key } })
    const events = await stream.events(2)
    expect(events.map(({ event }) => event.action)).toEqual(['group.created', 'user.deleted'])
    await stream.cancel()
  })

  test('a heartbeat every 15 s while nothing happens', async () => {
    const clock = new ManualClock(Date.now())
    await using t = await makeTestApp({}, clock)
    const key = await apiKey(t)
    const stream = await subscribe(t, key)
    clock.advance(15_000)
    expect(await stream.next()).toEqual({ comment: 'heartbeat' })
    clock.advance(15_000)
    expect(await stream.next()).toEqual({ comment: 'heartbeat' })
    await stream.cancel()
  })

  test('a client that reads nothing is dropped once a megabyte waits, not kept in memory', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const response = await t.app.handle(
      new Request('http://localhost/events', { headers: { 'x-api-key': key } }),
    )
    for (let tries = 0; tries < 100 && t.deps.feed.size === 0; tries++) await Bun.sleep(5)
    expect(t.deps.feed.size).toBe(1)
    const changes = { note: { before: null, after: 'x'.repeat(2000) } }
    for (let n = 0; n < 700; n++) {
      await t.deps.audit.record(SYSTEM, {
        action: 'user.updated',
        target: { type: 'user', id: '1' },
        changes,
      })
    }
    for (let tries = 0; tries < 200 && t.deps.feed.size > 0; tries++) await Bun.sleep(5)
    expect(t.deps.feed.size).toBe(0)
    // What was queued can still be read; then the stream ends, and the client would resume.
    const text = await response.text()
    expect(text.length).toBeGreaterThan(1 << 20)
    expect(text.length).toBeLessThan(3 << 20)
  })

  test('bad input is one 422 naming each part; credentials and scope as /audit', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const headers = { 'x-api-key': key }
    const error = expectEnvelope(
      await t.get('/events?types=user,Group.*', { headers: { ...headers, 'last-event-id': 'x' } }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details.map((detail) => detail.field).sort()).toEqual(['Last-Event-ID', 'types'])
    expectEnvelope(await t.get('/events?last_event_id=12'), 401, 'UNAUTHORIZED')
    const reader = (await t.deps.apiKeys.create({ name: 'r', scopes: ['users:read'] }, SYSTEM)).key
    expectEnvelope(await t.get('/events', { headers: { 'x-api-key': reader } }), 403, 'FORBIDDEN')
    const head = await t.call('HEAD', '/events', { headers })
    expect({
      status: head.status,
      type: head.headers.get('content-type'),
      body: head.text,
    }).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', body: '' })
    expect(t.deps.feed.size).toBe(0)
  })

  describe('streams are capped per credential and in all (CONTRACT section 17)', () => {
    /** Expects the 429 of a stream over a cap; returns its Retry-After and message. */
    const refused = async (t: TestApp, headers: Record<string, string>) => {
      const reply = await t.get('/events', { headers })
      const error = expectEnvelope(reply, 429, 'RATE_LIMITED')
      const retryAfter = reply.headers.get('retry-after') ?? ''
      expect(retryAfter).toMatch(/^[1-9][0-9]*$/)
      return { retryAfter: Number(retryAfter), message: error.message }
    }

    test('one key holds 10 at most: the 11th is 429 RATE_LIMITED with Retry-After; closing one frees its place', async () => {
      const clock = new ManualClock(Date.now())
      await using t = await makeTestApp({}, clock)
      const key = await apiKey(t, 'a')
      const streams: SseReader[] = []
      const mounts = ['', '/v1', '/v2']
      for (let n = 0; n < 10; n++) streams.push(await subscribe(t, key, `${mounts[n % 3]}/events`))
      clock.advance(4 * 60_000)
      const over = await refused(t, { 'x-api-key': key })
      // The oldest of its streams ends within its 10 minutes: 6 minutes left.
      expect(over.retryAfter).toBe(360)
      expect(over.message).toContain('10 event streams open')
      await refused(t, { 'x-api-key': key })
      expect(t.deps.feed.size).toBe(10)
      // Another key is not held back by this one's streams.
      const other = await subscribe(t, await apiKey(t, 'b'))
      await streams.pop()?.cancel()
      const again = await subscribe(t, key, '/v2/events')
      await refused(t, { 'x-api-key': key })
      for (const stream of [...streams, other, again]) await stream.cancel()
    })

    test('a user’s sessions and tokens count as one credential', async () => {
      await using t = await makeTestApp({ maxEventStreamsPerCredential: 2 })
      const ada = await signedIn(t)
      await t.deps.users.update(ada.userId, { role: 'admin' }, { versions: null }, SYSTEM)
      // Promoted, then signed in twice: a token from one sign-in, a session from the other.
      const byToken = { authorization: `Bearer ${(await signedInAgain(t)).token}` }
      const bySession = { cookie: (await signedInAgain(t)).cookie }
      const first = await subscribeWith(t, byToken)
      const second = await subscribeWith(t, bySession)
      const { message } = await refused(t, byToken)
      expect(message).toContain('2 event streams open')
      await refused(t, bySession)
      await first.cancel()
      const third = await subscribeWith(t, bySession)
      await second.cancel()
      await third.cancel()
    })

    test('the instance holds --max-event-streams in all: beyond, 429 for every credential until one closes', async () => {
      await using t = await makeTestApp({ maxEventStreams: 3 })
      const [a, b] = [await apiKey(t, 'a'), await apiKey(t, 'b')]
      const open = [await subscribe(t, a), await subscribe(t, a), await subscribe(t, b)]
      const over = await refused(t, { 'x-api-key': b })
      expect(over.message).toContain('3 event streams open')
      expect(over.retryAfter).toBeLessThanOrEqual(600)
      await refused(t, { 'x-api-key': await apiKey(t, 'c') })
      await open[0]?.cancel()
      const replaced = await subscribe(t, b)
      await refused(t, { 'x-api-key': a })
      for (const stream of [...open.slice(1), replaced]) await stream.cancel()
    })

    test('a stream that ends by itself (a client too slow) gives its place back; a refused request takes none', async () => {
      await using t = await makeTestApp({ maxEventStreamsPerCredential: 1 })
      const key = await apiKey(t)
      // Bad input is a 422 and holds no place.
      expectEnvelope(
        await t.get('/events?types=nope', { headers: { 'x-api-key': key } }),
        422,
        'VALIDATION_ERROR',
      )
      const response = await t.app.handle(
        new Request('http://localhost/events', { headers: { 'x-api-key': key } }),
      )
      for (let tries = 0; tries < 100 && t.deps.feed.size === 0; tries++) await Bun.sleep(5)
      await refused(t, { 'x-api-key': key })
      const changes = { note: { before: null, after: 'x'.repeat(2000) } }
      for (let n = 0; n < 700; n++) {
        await t.deps.audit.record(SYSTEM, {
          action: 'user.updated',
          target: { type: 'user', id: '1' },
          changes,
        })
      }
      for (let tries = 0; tries < 200 && t.deps.feed.size > 0; tries++) await Bun.sleep(5)
      await response.body?.cancel()
      const after = await subscribe(t, key)
      await after.cancel()
    })
  })
})

/** roster listening on a loopback port, over a fresh database of the run's backend. */
async function listening() {
  const data = await testData({ logFile: '/dev/null' })
  const server = await startServer(data.config, memoryLogger())
  const key = (await server.deps.apiKeys.create({ name: 'feed', scopes: ['*'] }, SYSTEM)).key
  return {
    ...server,
    key,
    async [Symbol.asyncDispose]() {
      await server.stop()
      await data[Symbol.asyncDispose]()
    },
  }
}

/**
 * Records events `from`…`to - 1` (their target ids), 200 at a time, each about 2.3 KB as a
 * frame: a table read of 500 is over a megabyte.
 */
async function recordMany(deps: Deps, from: number, to: number) {
  const changes = { note: { before: null, after: 'x'.repeat(2000) } }
  for (let start = from; start < to; start += 200) {
    const batch = []
    for (let n = start; n < Math.min(start + 200, to); n++) {
      batch.push(
        deps.audit.record(SYSTEM, {
          action: 'user.updated',
          target: { type: 'user', id: String(n) },
          changes,
        }),
      )
    }
    await Promise.all(batch)
  }
}

/** Polls until `check` holds (10 s at most). */
async function until(check: () => boolean, ms = 10_000) {
  for (const deadline = Date.now() + ms; !check(); await Bun.sleep(10)) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
  }
}

describe('GET /events over HTTP', () => {
  test('a client 12,000 events behind, reading as fast as it can, gets every one in order on one connection', async () => {
    await using server = await listening()
    const headers = { 'x-api-key': server.key }
    const first = await fetch(`${server.url}/events`, { headers })
    const marker = new SseReader(first.body as ReadableStream<Uint8Array>)
    await until(() => server.deps.feed.size === 1)
    await recordMany(server.deps, -1, 0)
    const [start] = await marker.events(1)
    await marker.cancel()
    const behind = 12_000
    await recordMany(server.deps, 0, behind)
    // Over a link of 10 MB/s: the client reads as fast as the network lets it.
    await using link = await slowLink(server.url, 10_000_000)
    const resumed = await fetch(`${link.url}/events`, {
      headers: { ...headers, 'last-event-id': start?.id as string },
    })
    const stream = new SseReader(resumed.body as ReadableStream<Uint8Array>)
    // Throws if the stream ends first (the server cut the client off).
    const events = await stream.events(behind, 10_000)
    // Each once (recorded many at a time, they commit in any order: the feed's is commit order).
    expect(events.map(({ event }) => Number(event.target.id)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: behind }, (_, n) => n),
    )
    const ids = events.map(({ id }) => id)
    expect(ids.filter((id, i) => i > 0 && (ids[i - 1] as string) >= id)).toEqual([])
    // Still the same connection, now live.
    await recordMany(server.deps, behind, behind + 1)
    expect((await stream.events(1))[0]?.event.target.id).toBe(String(behind))
    await stream.cancel()
  }, 120_000)

  test('a client that stops reading is cut off once a megabyte waits unread', async () => {
    await using server = await listening()
    const url = new URL(server.url)
    // A client that sends its request and then reads nothing: what the server writes fills the
    // sockets' buffers, then the stream's queue.
    const client = connect(Number(url.port), url.hostname)
    await new Promise<void>((resolve) => client.once('connect', () => resolve()))
    client.write(`GET /events HTTP/1.1\r\nHost: ${url.host}\r\nx-api-key: ${server.key}\r\n\r\n`)
    client.pause()
    await until(() => server.deps.feed.size === 1)
    let recorded = 0
    while (server.deps.feed.size > 0 && recorded < 60_000) {
      await recordMany(server.deps, recorded, recorded + 1000)
      recorded += 1000
      await Bun.sleep(20)
    }
    await until(() => server.deps.feed.size === 0)
    client.destroy()
  }, 120_000)
})
