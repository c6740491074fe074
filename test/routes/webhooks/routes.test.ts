import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { makeDeps } from '../../../src/deps'
import { memoryLogger } from '../../../src/log'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp, testData } from '../../helpers/app'
import { apiKey } from '../../helpers/auth'
import {
  ALL_SECRETS,
  event,
  GITHUB_SECRET,
  githubHeaders,
  standardHeaders,
  stripeHeaders,
} from '../../helpers/webhooks'

async function webhookApp(secrets: readonly string[] = ALL_SECRETS, clock?: ManualClock) {
  const t = await makeTestApp({ webhookSecrets: secrets }, clock)
  t.deps.webhooks.worker.retry = { baseMs: 20, capMs: 200, maxAttempts: 4 }
  return t
}

/**
 * A clock the test moves, for an app whose worker retries on it (no sleeping). It starts at the
 * real time: signatures carry timestamps that must be recent.
 */
const testClock = () => new ManualClock(Date.now())

/** Lets every retry fall due in turn: settle, move the clock past the longest backoff, again. */
async function runRetries(t: TestApp, clock: ManualClock, rounds: number) {
  for (let round = 0; round < rounds; round++) {
    await t.deps.webhooks.worker.settled()
    clock.advance(200)
  }
  await t.deps.webhooks.worker.settled()
}

const deliver = (t: TestApp, body: string, headers: Record<string, string>, path = '/webhooks') =>
  t.call('POST', path, { body, headers: { 'content-type': 'application/json', ...headers } })

async function events(t: TestApp, key?: string) {
  const reply = await t.get('/webhooks/events?limit=100', {
    headers: { 'x-api-key': key ?? (await apiKey(t, 'reader')) },
  })
  return reply.body.data as {
    id: string
    scheme: string
    type: string
    status: string
    attempts: number
    error: string | null
  }[]
}

const userByEmail = (t: TestApp, email: string) => t.deps.users.byEmail(email)

describe('POST /webhooks', () => {
  test('a valid delivery is stored, answered 200 {received: true}, then handled', async () => {
    await using t = await webhookApp()
    const body = event(
      'user.created',
      { email: 'new@example.com', name: 'New Person' },
      'evt_created_1',
    )
    const reply = await deliver(t, body, await stripeHeaders(body))
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ received: true })
    await t.deps.webhooks.worker.settled()
    const created = await userByEmail(t, 'new@example.com')
    expect((await t.deps.users.get(created?.id ?? 0))?.name).toBe('New Person')
    expect(await events(t)).toEqual([
      {
        id: 'evt_created_1',
        scheme: 'stripe',
        type: 'user.created',
        status: 'processed',
        attempts: 1,
        error: null,
        received_at: expect.any(String),
        processed_at: expect.any(String),
      } as never,
    ])
  })

  test('/webhook, /v1/webhooks and /v2/webhook answer the same', async () => {
    await using t = await webhookApp()
    for (const path of ['/webhook', '/v1/webhooks', '/v2/webhook']) {
      const body = event('noop.test', {})
      expect((await deliver(t, body, await githubHeaders(body), path)).status).toBe(200)
    }
  })

  test('event ids per scheme: webhook-id; the body id (Stripe); X-GitHub-Delivery, else the body id, else its SHA-256', async () => {
    await using t = await webhookApp()
    const one = event('x.one', {}, 'body-id-1')
    await deliver(t, one, standardHeaders(one, undefined, 'msg_header_id'))
    const two = event('x.two', {}, 'stripe-body-id')
    await deliver(t, two, await stripeHeaders(two))
    const three = event('x.three', {}, 'ignored-body-id')
    await deliver(t, three, await githubHeaders(three, GITHUB_SECRET, 'gh-delivery-1'))
    const four = event('x.four', {}, 'github-body-id')
    await deliver(t, four, await githubHeaders(four))
    const five = JSON.stringify({ type: 'x.five', data: { object: {} } })
    await deliver(t, five, await githubHeaders(five))
    const ids = (await events(t)).map((e) => [e.type, e.id])
    expect(ids).toEqual([
      ['x.five', new Bun.CryptoHasher('sha256').update(five).digest('hex')],
      ['x.four', 'github-body-id'],
      ['x.three', 'gh-delivery-1'],
      ['x.two', 'stripe-body-id'],
      ['x.one', 'msg_header_id'],
    ])
  })

  test('a redelivery is answered 200 and not handled again', async () => {
    await using t = await webhookApp()
    const body = event('user.created', { email: 'once@example.com' }, 'evt_dup')
    const headers = await stripeHeaders(body)
    for (let i = 0; i < 3; i++) expect((await deliver(t, body, headers)).status).toBe(200)
    await t.deps.webhooks.worker.settled()
    expect(await events(t)).toHaveLength(1)
    expect((await events(t))[0]?.attempts).toBe(1)
  })

  test('sha256=: a captured delivery resent under a new X-GitHub-Delivery is not handled again', async () => {
    await using t = await webhookApp()
    await t.post('/users', { name: 'Gone', email: 'gone@example.com' })
    const created = event('user.created', { email: 'gone@example.com', name: 'Gone' })
    const deleted = event('user.deleted', { email: 'gone@example.com' })
    const createdHeaders = await githubHeaders(created, GITHUB_SECRET, 'gh-1')
    expect((await deliver(t, created, createdHeaders)).status).toBe(200)
    // Handled before the deletion arrives: PostgreSQL's worker may run two events at once, and
    // a "created" that fails beside the deletion is retried after it (the user made again).
    await t.deps.webhooks.worker.settled()
    expect(
      (await deliver(t, deleted, await githubHeaders(deleted, GITHUB_SECRET, 'gh-2'))).status,
    ).toBe(200)
    await t.deps.webhooks.worker.settled()
    expect((await t.get('/users?limit=100')).body.pagination.total).toBe(0)
    // An attacker replays the captured "created" bytes and signature with a fresh delivery id.
    const replayed = await deliver(t, created, { ...createdHeaders, 'x-github-delivery': 'gh-3' })
    expect(replayed.status).toBe(200)
    expect(replayed.body).toEqual({ received: true })
    await t.deps.webhooks.worker.settled()
    expect((await t.get('/users?limit=100')).body.pagination.total).toBe(0)
    expect((await events(t)).map((e) => e.id)).toEqual(['gh-2', 'gh-1'])
    // The hash is kept for this scheme only: Stripe's timestamped signature already covers it.
    const stripeBody = event('noop.same', {}, 'evt_same_1')
    expect((await deliver(t, stripeBody, await stripeHeaders(stripeBody))).status).toBe(200)
    expect((await events(t)).length).toBe(3)
  })

  test('twenty copies arriving at the same moment: one event, handled once', async () => {
    await using t = await webhookApp()
    let handled = 0
    t.deps.webhooks.worker.handlers.set('count.me', () => {
      handled += 1
      return 'processed'
    })
    const body = event('count.me', {}, 'evt_burst')
    const headers = await stripeHeaders(body)
    const replies = await Promise.all(Array.from({ length: 20 }, () => deliver(t, body, headers)))
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200))
    await t.deps.webhooks.worker.settled()
    expect(handled).toBe(1)
    expect(await events(t)).toHaveLength(1)
  })

  test('the 200 leaves while the handler is still running; the outcome is recorded after', async () => {
    await using t = await webhookApp()
    let release: () => void = () => {}
    const blocked = new Promise<void>((resolve) => {
      release = resolve
    })
    let started: () => void = () => {}
    const handlerStarted = new Promise<void>((resolve) => {
      started = resolve
    })
    t.deps.webhooks.worker.handlers.set('slow.job', async () => {
      started()
      await blocked
      return 'processed' as const
    })
    // Made first: a handler holds SQLite's writer until it settles (it is meant to await only
    // its stores), so creating the key while this one waits would wait too.
    const key = await apiKey(t, 'reader')
    const body = event('slow.job', {})
    // Were the answer to wait for the handler, it would never come: the handler waits for us.
    const reply = await Promise.race([
      deliver(t, body, await githubHeaders(body)),
      Bun.sleep(5000).then(() => 'no answer while the handler ran' as const),
    ])
    expect(reply).not.toBe('no answer while the handler ran')
    expect((reply as { status: number }).status).toBe(200)
    await handlerStarted
    expect((await events(t, key))[0]?.status).toBe('pending')
    release()
    await t.deps.webhooks.worker.settled()
    expect((await events(t, key))[0]?.status).toBe('processed')
  })

  test('a plain function that returns a promise is awaited like an async one', async () => {
    // A clock that stands still: the failure's retry (20 ms later) must not run before it is
    // read, which on PostgreSQL's round trips it could.
    await using t = await webhookApp(ALL_SECRETS, testClock())
    let calls = 0
    // Not declared async: only its result is a promise.
    t.deps.webhooks.worker.handlers.set('promised.job', () => {
      calls += 1
      return Bun.sleep(5).then(() => 'processed' as const)
    })
    t.deps.webhooks.worker.handlers.set('promised.failure', () =>
      Promise.reject(new Error('rejected later')),
    )
    for (const type of ['promised.job', 'promised.failure']) {
      const body = event(type, {}, type)
      await deliver(t, body, await githubHeaders(body))
    }
    await t.deps.webhooks.worker.settled()
    const byId = new Map((await events(t)).map((e) => [e.id, e]))
    expect(byId.get('promised.job')).toMatchObject({
      status: 'processed',
      attempts: 1,
      error: null,
    })
    expect(byId.get('promised.failure')).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: 'rejected later',
    })
    expect(calls).toBe(1)
  })

  test('a handler that fails after writing has its writes rolled back with it', async () => {
    // A clock that stands still: the retry would otherwise fall due 20 ms later, mid-read.
    await using t = await webhookApp(ALL_SECRETS, testClock())
    t.deps.webhooks.worker.handlers.set('half.done', async (_event, { users }) => {
      await users.create({ name: 'Half', email: 'half@example.com', passwordHash: null }, SYSTEM)
      throw new Error('failed after the write')
    })
    const body = event('half.done', {})
    await deliver(t, body, await githubHeaders(body))
    await t.deps.webhooks.worker.settled()
    expect((await events(t))[0]).toMatchObject({
      status: 'failed',
      error: 'failed after the write',
    })
    expect(await userByEmail(t, 'half@example.com')).toBeNull()
  })

  test('a failing handler marks the event failed with its error, and a retry with backoff succeeds', async () => {
    const clock = testClock()
    await using t = await webhookApp(ALL_SECRETS, clock)
    let calls = 0
    t.deps.webhooks.worker.handlers.set('flaky.job', () => {
      calls += 1
      if (calls === 1) throw new Error('downstream is down')
      return 'processed'
    })
    const body = event('flaky.job', {})
    await deliver(t, body, await githubHeaders(body))
    await t.deps.webhooks.worker.settled()
    const failed = (await events(t))[0]
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, error: 'downstream is down' })
    // Not before the backoff (20 ms on this clock) has passed.
    clock.advance(19)
    await t.deps.webhooks.worker.settled()
    expect(calls).toBe(1)
    clock.advance(1)
    await t.deps.webhooks.worker.settled()
    expect((await events(t))[0]).toMatchObject({ status: 'processed', attempts: 2, error: null })
    expect(calls).toBe(2)
    expect(t.log.lines.join('')).toContain('webhook handler failed')
  })

  test('retries stop after the last attempt; the event stays failed', async () => {
    const clock = testClock()
    await using t = await webhookApp(ALL_SECRETS, clock)
    t.deps.webhooks.worker.handlers.set('always.fails', () => {
      throw new Error('nope')
    })
    const body = event('always.fails', {})
    await deliver(t, body, await githubHeaders(body))
    await runRetries(t, clock, 5)
    expect((await events(t))[0]).toMatchObject({ status: 'failed', attempts: 4, error: 'nope' })
  })

  test('POST /webhooks/events/{id}/retry: a failed event (retries used up) is tried again now; 202', async () => {
    const clock = testClock()
    await using t = await webhookApp(ALL_SECRETS, clock)
    let broken = true
    t.deps.webhooks.worker.handlers.set('flaky.thing', () => {
      if (broken) throw new Error('downstream is down')
      return 'processed'
    })
    const body = event('flaky.thing', {}, 'evt with space/and%')
    await deliver(t, body, await stripeHeaders(body))
    await runRetries(t, clock, 5)
    expect((await events(t))[0]).toMatchObject({ status: 'failed', attempts: 4 })
    broken = false
    const key = { 'x-api-key': await apiKey(t, 'retrier') }
    const path = `/webhooks/events/${encodeURIComponent('evt with space/and%')}/retry`
    const retried = await t.call('POST', path, { headers: key })
    expect(retried.status).toBe(202)
    expect(retried.body).toMatchObject({ id: 'evt with space/and%', status: 'failed', attempts: 4 })
    await t.deps.webhooks.worker.settled()
    expect((await events(t))[0]).toMatchObject({ status: 'processed', attempts: 5, error: null })
    // Processed now: another retry is a conflict.
    expectEnvelope(await t.call('POST', path, { headers: key }), 409, 'CONFLICT')
  })

  test('retry refusals: 404 for an unknown id, 409 for a pending or processed one, 401 without a key', async () => {
    await using t = await webhookApp()
    const key = { 'x-api-key': await apiKey(t, 'retrier') }
    expectEnvelope(
      await t.call('POST', '/webhooks/events/evt_nope/retry', { headers: key }),
      404,
      'NOT_FOUND',
    )
    expectEnvelope(
      await t.call('POST', '/webhooks/events/%E0%A4%A/retry', { headers: key }),
      404,
      'NOT_FOUND',
    )
    const body = event('user.created', { email: 'r@example.com' }, 'evt_done')
    await deliver(t, body, await stripeHeaders(body))
    await t.deps.webhooks.worker.settled()
    expectEnvelope(
      await t.call('POST', '/v2/webhooks/events/evt_done/retry', { headers: key }),
      409,
      'CONFLICT',
    )
    const unauthorized = await t.call('POST', '/webhooks/events/evt_done/retry')
    expectEnvelope(unauthorized, 401, 'UNAUTHORIZED')
    expect(unauthorized.headers.get('www-authenticate')).toStartWith('ApiKey')
  })

  test('wake-ups that keep coming do not hold the handling back', async () => {
    await using t = await webhookApp()
    const { inbox, worker } = t.deps.webhooks
    let handled = 0
    worker.handlers.set('steady.tick', () => {
      handled += 1
      return 'processed'
    })
    // Wake-ups as fast as the event loop turns (deliveries each wake the worker), with a new
    // event every 10 ms. The wake-ups go on until ten events are handled: a worker that waited
    // for them to stop would handle none (the loop gives up after 10 s). No fixed window, so a
    // slow machine or PostgreSQL's round trips only make it take longer.
    const recorded: Promise<unknown>[] = []
    let nextEventAt = performance.now()
    const giveUpAt = performance.now() + 10_000
    while (handled < 10 && performance.now() < giveUpAt) {
      if (performance.now() >= nextEventAt) {
        const payload = '{"data":{"object":{}}}'
        recorded.push(
          inbox.record({
            eventId: `tick-${recorded.length}`,
            scheme: 'sha256',
            type: 'steady.tick',
            payload,
            bodySha256: null,
          }),
        )
        nextEventAt += 10
      }
      worker.wake()
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(handled).toBeGreaterThanOrEqual(10)
    await Promise.all(recorded)
    worker.wake()
    await worker.settled()
    expect(handled).toBe(recorded.length)
  })

  test('unknown types are stored as ignored', async () => {
    await using t = await webhookApp()
    const body = event('invoice.paid', { amount: 10 })
    await deliver(t, body, await githubHeaders(body))
    await t.deps.webhooks.worker.settled()
    expect((await events(t))[0]).toMatchObject({
      type: 'invoice.paid',
      status: 'ignored',
      error: null,
    })
  })
})

describe('the user and customer handlers', () => {
  async function send(t: TestApp, type: string, object: Record<string, unknown>) {
    const body = event(type, object)
    expect((await deliver(t, body, standardHeaders(body))).status).toBe(200)
    await t.deps.webhooks.worker.settled()
  }

  test('created and updated upsert by email (name from data.object.name); deleted removes', async () => {
    await using t = await webhookApp()
    await send(t, 'customer.created', { email: 'Cus@Example.com', name: 'Cus Tomer' })
    const created = await t.deps.users.get((await userByEmail(t, 'cus@example.com'))?.id ?? 0)
    expect(created).toMatchObject({ name: 'Cus Tomer', email: 'Cus@Example.com' })
    await send(t, 'customer.updated', { email: 'cus@example.com', name: 'Renamed' })
    expect((await t.deps.users.get(created?.id ?? 0))?.name).toBe('Renamed')
    await send(t, 'user.updated', { email: 'fresh@example.com' })
    expect(
      (await t.deps.users.get((await userByEmail(t, 'fresh@example.com'))?.id ?? 0))?.name,
    ).toBe('fresh')
    await send(t, 'user.deleted', { email: 'CUS@example.com' })
    expect(await userByEmail(t, 'cus@example.com')).toBeNull()
  })

  test('*.deleted for an unknown email is a no-op that ends processed', async () => {
    await using t = await webhookApp()
    await send(t, 'customer.deleted', { email: 'nobody@example.com' })
    expect((await events(t))[0]).toMatchObject({ status: 'processed', error: null })
  })

  test('a missing or invalid email fails the event with a readable error', async () => {
    await using t = await webhookApp(ALL_SECRETS, testClock())
    await send(t, 'user.created', { name: 'No Email' })
    expect((await events(t))[0]).toMatchObject({
      status: 'failed',
      error: 'data.object.email is missing or is not an email address',
    })
  })
})

describe('refusals', () => {
  test('every bad signature is 400 INVALID_SIGNATURE with the envelope, and nothing is stored', async () => {
    await using t = await webhookApp()
    const body = event('user.created', { email: 'x@example.com' })
    const valid = await stripeHeaders(body)
    const cases: Record<string, string>[] = [
      {},
      { 'stripe-signature': 'garbage' },
      await stripeHeaders(body, 'whsec_wrong'),
      { ...valid, 'webhook-id': 'msg_1' },
      await stripeHeaders(body, undefined, new Date(Date.now() - 10 * 60_000)),
    ]
    for (const headers of cases)
      expectEnvelope(await deliver(t, body, headers), 400, 'INVALID_SIGNATURE')
    expectEnvelope(await deliver(t, body.replace('x@', 'y@'), valid), 400, 'INVALID_SIGNATURE')
    expectEnvelope(await deliver(t, '', valid), 400, 'INVALID_SIGNATURE')
    expect(await t.deps.webhooks.inbox.count()).toBe(0)
  })

  test('without a configured secret every delivery is refused', async () => {
    await using t = await webhookApp([])
    const body = event('user.created', { email: 'x@example.com' })
    const reply = await deliver(t, body, await stripeHeaders(body))
    expect(expectEnvelope(reply, 400, 'INVALID_SIGNATURE').message).toContain('No webhook secret')
  })

  test('a valid signature over a body that is not JSON is 400 BAD_REQUEST', async () => {
    await using t = await webhookApp()
    for (const body of ['not json', '{"type":', '\u00ff\u00fe']) {
      expectEnvelope(await deliver(t, body, await githubHeaders(body)), 400, 'BAD_REQUEST')
    }
    expect(await t.deps.webhooks.inbox.count()).toBe(0)
  })

  test.each([
    ['[]', 'body'],
    ['{"data":{"object":{}}}', 'type'],
    ['{"type":"a"}', 'data'],
    ['{"type":"a","data":{"object":[]}}', 'data.object'],
    ['{"type":7,"data":{"object":"x"}}', 'type'],
  ])('a valid signature over %s is 422 naming %s', async (body, field) => {
    await using t = await webhookApp()
    const error = expectEnvelope(
      await deliver(t, body, await githubHeaders(body)),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details.map((d) => d.field)).toContain(field)
  })

  test('a Stripe event without an id is 422', async () => {
    await using t = await webhookApp()
    const body = JSON.stringify({ type: 'user.created', data: { object: {} } })
    const error = expectEnvelope(
      await deliver(t, body, await stripeHeaders(body)),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details.map((d) => d.field)).toEqual(['id'])
  })

  test('a body over 1 MiB is 413 before anything else', async () => {
    await using t = await webhookApp()
    const body = event('big', { blob: 'x'.repeat(1024 * 1024) })
    expectEnvelope(await deliver(t, body, await githubHeaders(body)), 413, 'PAYLOAD_TOO_LARGE')
  })
})

describe('GET /webhooks/events', () => {
  test('needs an API key; newest first; the common list envelope and headers', async () => {
    await using t = await webhookApp()
    for (let i = 1; i <= 5; i++) {
      const body = event(`t.${i}`, {}, `e${i}`)
      await deliver(t, body, await githubHeaders(body))
    }
    expectEnvelope(await t.get('/webhooks/events'), 401, 'UNAUTHORIZED')
    const key = { 'x-api-key': await apiKey(t) }
    const page = await t.get('/webhooks/events?limit=2&offset=1', { headers: key })
    expect(page.body.data.map((e: { id: string }) => e.id)).toEqual(['e4', 'e3'])
    expect(page.body.pagination).toEqual({ limit: 2, offset: 1, total: 5 })
    expect(page.headers.get('x-total-count')).toBe('5')
    expect(page.headers.get('link')).toContain('rel="last"')
    expect(page.headers.get('link')).toContain('offset=4')
    expect((await t.get('/data', { headers: key })).body.data.webhook_events).toBe(5)
  })
  test('?status= keeps the events in that state; links repeat it; a bad one is 422', async () => {
    await using t = await webhookApp()
    for (let i = 1; i <= 3; i++) {
      const body = event(`nobody.listens.${i}`, {}, `ign${i}`)
      await deliver(t, body, await githubHeaders(body))
    }
    const created = event('user.created', { email: 'filter@example.com', name: 'F' }, 'made1')
    await deliver(t, created, await githubHeaders(created))
    await t.deps.webhooks.worker.settled()
    const key = { 'x-api-key': await apiKey(t) }
    const ignored = await t.get('/webhooks/events?status=ignored&limit=2', { headers: key })
    expect(ignored.body.data.map((e: { id: string }) => e.id)).toEqual(['ign3', 'ign2'])
    expect(ignored.body.pagination).toEqual({ limit: 2, offset: 0, total: 3 })
    expect(ignored.headers.get('x-total-count')).toBe('3')
    expect(ignored.headers.get('link')).toContain(
      '/webhooks/events?status=ignored&limit=2&offset=2>; rel="next"',
    )
    const processed = await t.get('/v2/webhooks/events?status=processed', { headers: key })
    expect(processed.body.data.map((e: { id: string }) => e.id)).toEqual(['made1'])
    const none = await t.get('/webhooks/events?status=failed', { headers: key })
    expect(none.body).toEqual({ data: [], pagination: { limit: 20, offset: 0, total: 0 } })
    for (const bad of ['status=Failed', 'status=', 'status=failed&status=pending']) {
      const reply = await t.get(`/webhooks/events?${bad}`, { headers: key })
      expectEnvelope(reply, 422, 'VALIDATION_ERROR')
      expect(reply.body.error.details[0].field).toBe('status')
    }
  })
})

describe('a restart', () => {
  test('picks up events left pending or failed by a crash, and handles them once', async () => {
    await using data = await testData({ webhookSecrets: ALL_SECRETS })
    const { config } = data
    const first = await makeDeps(config, memoryLogger())
    // Stored but never handled: the process died right after answering.
    await first.webhooks.inbox.record({
      eventId: 'evt_a',
      scheme: 'stripe',
      type: 'user.created',
      payload: event('user.created', { email: 'a@example.com' }, 'evt_a'),
      bodySha256: null,
    })
    await first.webhooks.inbox.record({
      eventId: 'evt_b',
      scheme: 'stripe',
      type: 'user.created',
      payload: event('user.created', { email: 'b@example.com' }, 'evt_b'),
      bodySha256: null,
    })
    await first.close()
    const second = await makeDeps(config, memoryLogger())
    second.webhooks.worker.start()
    await second.webhooks.worker.settled()
    // Made by the handler: each a user without a password.
    for (const email of ['a@example.com', 'b@example.com']) {
      expect(await second.users.byEmail(email)).toEqual({
        id: expect.any(Number),
        email,
        passwordHash: null,
        role: 'member',
        verified: false,
        active: true,
        secondFactor: false,
      })
    }
    expect(
      (await second.webhooks.inbox.list({ limit: 10, offset: 0 })).data.map((e) => e.status),
    ).toEqual(['processed', 'processed'])
    await second.webhooks.worker.stop()
    await second.close()
  })
})

describe('shutdown', () => {
  test('stop() lets the handler in flight finish before the database closes', async () => {
    const { startServer } = await import('../../../src/server')
    await using data = await testData({ webhookSecrets: ALL_SECRETS })
    const server = await startServer(data.config, memoryLogger())
    let finished = false
    server.deps.webhooks.worker.handlers.set('slow.job', async () => {
      await Bun.sleep(300)
      finished = true
      return 'processed' as const
    })
    const body = event('slow.job', {})
    const reply = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      body,
      headers: await githubHeaders(body),
    })
    expect(reply.status).toBe(200)
    await Bun.sleep(20)
    await server.stop()
    expect(finished).toBe(true)
    const reopened = await makeDeps(data.config, memoryLogger())
    expect((await reopened.webhooks.inbox.list({ limit: 1, offset: 0 })).data[0]?.status).toBe(
      'processed',
    )
    await reopened.close()
  })
})
