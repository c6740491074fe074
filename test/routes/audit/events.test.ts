import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { apiKey } from '../../helpers/auth'
import { SseReader } from '../../helpers/sse'

/** A stream of /events, once the hub has it (its first read of the feed done). */
async function subscribe(t: TestApp, key: string, path = '/events', headers = {}) {
  const before = t.deps.feed.size
  const response = await t.app.handle(
    new Request(`http://localhost${path}`, { headers: { 'x-api-key': key, ...headers } }),
  )
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  expect(response.headers.get('cache-control')).toBe('no-store')
  const reader = new SseReader(response.body as ReadableStream<Uint8Array>)
  expect(await reader.next()).toEqual({ retry: '3000' })
  for (let tries = 0; tries < 500 && t.deps.feed.size === before; tries++) await Bun.sleep(2)
  return reader
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
})
