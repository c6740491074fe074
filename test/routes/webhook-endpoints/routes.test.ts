import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import type { Grant } from '../../../src/auth/access'
import { dbQuery, expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { PASSWORD, signedIn } from '../../helpers/auth'
import { startReceiver, verifyDelivery } from '../../helpers/receiver'

type Headers = Record<string, string>

async function keyWith(t: TestApp, scopes: Grant[]): Promise<Headers> {
  const made = await t.deps.apiKeys.create({ name: scopes.join(' '), scopes }, SYSTEM)
  return { 'x-api-key': made.key }
}

/** An app that may send to the test's receiver on 127.0.0.1, and an all-scopes key. */
async function appWithKey() {
  const t = await makeTestApp({ webhookAllowPrivate: true })
  return { t, headers: await keyWith(t, ['*']) }
}

async function createEndpoint(t: TestApp, headers: Headers, body: Record<string, unknown>) {
  const reply = await t.post('/webhook-endpoints', body, { headers })
  if (reply.status !== 201) throw new Error(`endpoint not made: ${reply.text}`)
  return reply.body as { id: number; secret: string; url: string }
}

const makeUser = (t: TestApp, headers: Headers, n: number) =>
  t.post('/users', { name: `User ${n}`, email: `user${n}@example.com` }, { headers })

describe('/webhook-endpoints', () => {
  test('POST makes one: 201, Location, ETag and the secret, shown this once', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    const reply = await t.post(
      '/webhook-endpoints',
      { url: receiver.url, events: ['user.*', 'user.created'], description: 'CRM sync' },
      { headers },
    )
    expect(reply.status).toBe(201)
    expect(reply.headers.get('location')).toBe(`/webhook-endpoints/${reply.body.id}`)
    expect(reply.headers.get('etag')).toBe(`"${reply.body.id}.1"`)
    expect(reply.body).toEqual({
      id: expect.any(Number),
      url: receiver.url,
      description: 'CRM sync',
      events: ['user.*', 'user.created'],
      status: 'enabled',
      disabled_reason: null,
      previous_secret_expires_at: null,
      created_at: expect.stringMatching(/Z$/),
      updated_at: reply.body.created_at,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    })
    const read = await t.get(`/v2/webhook-endpoints/${reply.body.id}`, { headers })
    expect(read.body).not.toHaveProperty('secret')
    expect(read.text).not.toContain(reply.body.secret)
    const list = await t.get('/v1/webhook-endpoints', { headers })
    expect(list.body.pagination).toEqual({ limit: 20, offset: 0, total: 1 })
    expect(list.headers.get('x-total-count')).toBe('1')
    expect(list.text).not.toContain(reply.body.secret)
    // Its making is in the audit log, the secret only as changed.
    const audit = await t.get('/audit?target_type=webhook_endpoint', { headers })
    expect(audit.body.data[0]).toMatchObject({
      action: 'webhook_endpoint.created',
      actor: { type: 'api_key' },
      changes: {
        url: { before: null, after: receiver.url },
        events: { before: null, after: ['user.*', 'user.created'] },
        secret: { changed: true },
      },
    })
    expect(audit.text).not.toContain(reply.body.secret)
  })

  test('bad bodies are 422 naming the field, and nothing is made', async () => {
    const { t, headers } = await appWithKey()
    await using _ = t
    const cases: [Record<string, unknown>, string][] = [
      [{ events: ['*'] }, 'url'],
      [{ url: 'https://hooks.example.com/x' }, 'events'],
      [{ url: 'ftp://hooks.example.com/x', events: ['*'] }, 'url'],
      [{ url: 'https://u:p@hooks.example.com/x', events: ['*'] }, 'url'],
      [{ url: 'https://hooks.example.com/x#f', events: ['*'] }, 'url'],
      [{ url: 'https://hooks.example.com/x', events: [] }, 'events'],
      [{ url: 'https://hooks.example.com/x', events: ['user.exploded'] }, 'events[0]'],
      [{ url: 'https://hooks.example.com/x', events: ['*', 'users.*'] }, 'events[1]'],
      [{ url: 'https://hooks.example.com/x', events: 'user.created' }, 'events'],
      [{ url: 'https://hooks.example.com/x', events: ['*'], secret: 'whsec_x' }, 'secret'],
      [
        { url: 'https://hooks.example.com/x', events: ['*'], description: 'd'.repeat(501) },
        'description',
      ],
      [
        { url: 'https://hooks.example.com/x', events: ['*'], description: 'a\u202eb' },
        'description',
      ],
      [{ url: `https://hooks.example.com/${'a'.repeat(2100)}`, events: ['*'] }, 'url'],
    ]
    for (const [body, field] of cases) {
      const error = expectEnvelope(
        await t.post('/webhook-endpoints', body, { headers }),
        422,
        'VALIDATION_ERROR',
      )
      expect(error.details.map((detail) => detail.field)).toContain(field)
    }
    expectEnvelope(
      await t.call('POST', '/webhook-endpoints', {
        body: '{"url":',
        headers: { ...headers, 'content-type': 'application/json' },
      }),
      400,
      'BAD_REQUEST',
    )
    expectEnvelope(
      await t.call('POST', '/webhook-endpoints', {
        body: 'url=x',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    expect((await t.get('/webhook-endpoints', { headers })).body.pagination.total).toBe(0)
  })

  test('without --webhook-allow-private, URLs on this machine or a private network are refused', async () => {
    await using t = await makeTestApp()
    const headers = await keyWith(t, ['*'])
    for (const url of [
      'http://127.0.0.1:9/hooks',
      'http://localhost/hooks',
      'http://10.0.0.8/hooks',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hooks',
      'http://[::ffff:127.0.0.1]/hooks',
      'http://192.168.1.1/',
    ]) {
      const error = expectEnvelope(
        await t.post('/webhook-endpoints', { url, events: ['*'] }, { headers }),
        422,
        'VALIDATION_ERROR',
      )
      expect(error.details[0]).toMatchObject({ field: 'url', received: url })
      expect(error.details[0]?.message).toContain('--webhook-allow-private')
    }
    const unresolvable = expectEnvelope(
      await t.post(
        '/webhook-endpoints',
        { url: 'https://no-such-host.invalid/x', events: ['*'] },
        { headers },
      ),
      422,
      'VALIDATION_ERROR',
    )
    expect(unresolvable.details[0]?.message).toStartWith('no-such-host.invalid does not resolve')
    expect((await t.get('/webhook-endpoints', { headers })).body.pagination.total).toBe(0)
  })

  test('an IPv6 URL that carries an IPv4 address is judged by that address (CONTRACT section 17)', async () => {
    await using t = await makeTestApp()
    const headers = await keyWith(t, ['*'])
    const refused = {
      'http://[::7f00:1]/hooks': 'carrying 127.0.0.1: loopback',
      'http://[::127.0.0.1]/hooks': 'carrying 127.0.0.1: loopback',
      'http://[::ffff:0:7f00:1]/hooks': 'carrying 127.0.0.1: loopback',
      'http://[::a9fe:a9fe]/latest/meta-data': 'carrying 169.254.169.254: link-local',
      'http://[64:ff9b::a00:1]/hooks': 'NAT64, carrying 10.0.0.1: private',
      'http://[2002:a9fe:a9fe::1]/hooks': '6to4, carrying 169.254.169.254: link-local',
      'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hooks': 'Teredo, carrying 127.0.0.1',
      'http://[2001:db8::1]/hooks': 'reserved',
      'http://[fd00::1]/hooks': 'unique-local',
    }
    for (const [url, what] of Object.entries(refused)) {
      const error = expectEnvelope(
        await t.post('/webhook-endpoints', { url, events: ['*'] }, { headers }),
        422,
        'VALIDATION_ERROR',
      )
      expect(error.details).toHaveLength(1)
      expect(error.details[0]).toMatchObject({ field: 'url', received: url })
      expect(error.details[0]?.message).toContain('is not a global unicast address: ')
      expect(error.details[0]?.message).toContain(what)
      expect(error.details[0]?.message).toContain('--webhook-allow-private')
    }
    expect((await t.get('/webhook-endpoints', { headers })).body.pagination.total).toBe(0)
  })

  test('who may: webhooks:write and audit:read, or an admin; the 403 names what is missing', async () => {
    await using receiver = await startReceiver()
    await using t = await makeTestApp({ webhookAllowPrivate: true, usersAccess: 'protected' })
    const body = { url: receiver.url, events: ['*'] }
    const writeOnly = await keyWith(t, ['webhooks:write'])
    const auditOnly = await keyWith(t, ['audit:read'])
    let error = expectEnvelope(
      await t.post('/webhook-endpoints', body, { headers: writeOnly }),
      403,
      'FORBIDDEN',
    )
    expect(error.details[0]).toMatchObject({ field: 'scope', message: 'audit:read is required' })
    error = expectEnvelope(
      await t.post('/webhook-endpoints', body, { headers: auditOnly }),
      403,
      'FORBIDDEN',
    )
    expect(error.details[0]).toMatchObject({
      field: 'scope',
      message: 'webhooks:write is required',
    })
    const readOnly = await keyWith(t, ['webhooks:read', 'audit:read'])
    expectEnvelope(
      await t.post('/webhook-endpoints', body, { headers: readOnly }),
      403,
      'FORBIDDEN',
    )
    expect((await t.get('/webhook-endpoints', { headers: readOnly })).status).toBe(200)
    const both = await keyWith(t, ['webhooks:write', 'audit:read'])
    expect((await t.post('/webhook-endpoints', body, { headers: both })).status).toBe(201)
    expectEnvelope(await t.get('/webhook-endpoints'), 401, 'UNAUTHORIZED')
    // A member is refused; an admin signed in with a password may.
    const admin = await keyWith(t, ['*'])
    const member = await t.post(
      '/users',
      { name: 'M', email: 'm@example.com', password: PASSWORD },
      { headers: admin },
    )
    const session = await signedIn(t, 'm@example.com').catch(() => null)
    expect(member.status).toBe(201)
    expect(session).not.toBeNull()
    expectEnvelope(
      await t.get('/webhook-endpoints', { headers: { authorization: `Bearer ${session?.token}` } }),
      403,
      'FORBIDDEN',
    )
    await t.call('PATCH', `/users/${member.body.id}`, { json: { role: 'admin' }, headers: admin })
    const adminSession = await signedIn(t, 'm@example.com')
    expect(
      (
        await t.get('/webhook-endpoints', {
          headers: { authorization: `Bearer ${adminSession.token}` },
        })
      ).status,
    ).toBe(200)
  })

  test('deliveries: the subscribed events after its making, in order, signed, as the audit log has them', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    await makeUser(t, headers, 0)
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['user.created', 'group.*'],
    })
    for (let n = 1; n <= 5; n++) await makeUser(t, headers, n)
    await t.call('DELETE', '/users/1', { headers })
    await t.post('/groups', { name: 'Ops' }, { headers })
    await receiver.until(6)
    await Bun.sleep(100)
    expect(receiver.received).toHaveLength(6)
    const types = receiver.received.map((entry) => entry.payload.type)
    expect(types).toEqual([...Array(5).fill('user.created'), 'group.created'])
    const emails = receiver.received
      .slice(0, 5)
      .map((entry) => (entry.payload.data.changes as { email: { after: string } }).email.after)
    expect(emails).toEqual([1, 2, 3, 4, 5].map((n) => `user${n}@example.com`))
    for (const entry of receiver.received) {
      verifyDelivery(entry, endpoint.secret)
      expect(entry.headers['content-type']).toBe('application/json')
      expect(entry.headers['user-agent']).toMatch(/^roster\//)
      expect(entry.headers['webhook-id']).toBe(entry.payload.data.id)
      const event = await t.get(`/audit/${entry.payload.data.id}`, { headers })
      expect(entry.payload).toEqual({
        type: event.body.action,
        timestamp: event.body.at,
        data: event.body,
      })
    }
    await t.deps.outbound.sender.settled()
    const log = await t.get(`/webhook-endpoints/${endpoint.id}/deliveries?status=delivered`, {
      headers,
    })
    expect(log.body.data).toHaveLength(6)
    expect(log.body.data[0]).toMatchObject({
      endpoint_id: endpoint.id,
      type: 'group.created',
      status: 'delivered',
      attempts: 1,
      response_status: 200,
      response_body: 'ok',
      last_error: null,
      next_attempt_at: null,
    })
  })

  test('a failing receiver: retried with backoff, later events wait behind it, all arrive once it answers', async () => {
    await using receiver = await startReceiver({ status: 503, body: 'maintenance' })
    const { t, headers } = await appWithKey()
    await using _ = t
    t.deps.outbound.sender.policy = { ...t.deps.outbound.sender.policy, baseMs: 200 }
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['user.created'],
    })
    await makeUser(t, headers, 1)
    await makeUser(t, headers, 2)
    const first = async () =>
      (await t.get(`/webhook-endpoints/${endpoint.id}/deliveries`, { headers })).body.data.at(-1)
    for (let tries = 0; !((await first())?.attempts >= 2) && tries < 200; tries++)
      await Bun.sleep(50)
    expect(await first()).toMatchObject({
      status: 'pending',
      attempts: 2,
      response_status: 503,
      response_body: 'maintenance',
      last_error: 'HTTP 503',
    })
    // Only the first event was tried: the second waits its turn.
    expect(new Set(receiver.received.map((entry) => entry.headers['webhook-id'])).size).toBe(1)
    receiver.mode = 'ok'
    await receiver.until(2)
    expect(receiver.answered.map((entry) => entry.payload.data.target)).toEqual([
      { type: 'user', id: '1' },
      { type: 'user', id: '2' },
    ])
  })

  test('a receiver that hangs is given up after the timeout; one that redirects is not followed', async () => {
    await using receiver = await startReceiver('hang')
    const { t, headers } = await appWithKey()
    await using _ = t
    t.deps.outbound.sender.policy = {
      ...t.deps.outbound.sender.policy,
      timeoutMs: 300,
      baseMs: 60_000,
    }
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['user.created'],
    })
    await makeUser(t, headers, 1)
    const last = async () =>
      (await t.get(`/webhook-endpoints/${endpoint.id}/deliveries`, { headers })).body.data[0]
    for (let tries = 0; (await last())?.attempts !== 1 && tries < 100; tries++) await Bun.sleep(50)
    expect(await last()).toMatchObject({
      status: 'pending',
      attempts: 1,
      response_status: null,
      last_error: 'no answer in time (timed out)',
    })
    receiver.mode = 'redirect'
    const retried = await t.post(
      `/webhook-endpoints/${endpoint.id}/deliveries/${(await last()).id}/retry`,
      {},
      { headers },
    )
    expect(retried.body).toMatchObject({ status: 'pending', attempts: 0 })
    for (
      let tries = 0;
      (await last())?.attempts !== 1 || (await last())?.response_status === null;
      tries++
    ) {
      if (tries > 100) break
      await Bun.sleep(50)
    }
    expect(await last()).toMatchObject({
      response_status: 302,
      last_error: 'HTTP 302 (redirects are not followed)',
    })
    expect(receiver.received.map((entry) => entry.path)).toEqual(['/hooks', '/hooks'])
  })

  test('a URL that became private since it was checked is refused at delivery: nothing is sent', async () => {
    await using receiver = await startReceiver()
    await using t = await makeTestApp()
    const headers = await keyWith(t, ['*'])
    // As if its name had resolved to a public address when it was made.
    await t.deps.transaction((tx) =>
      tx.outbound.create(
        { url: receiver.url.replace('127.0.0.1', 'localhost'), events: ['*'], description: null },
        '0',
        SYSTEM,
      ),
    )
    t.deps.outbound.dispatcher.endpointsChanged()
    await makeUser(t, headers, 1)
    const last = async () =>
      (await t.get('/webhook-endpoints/1/deliveries', { headers })).body.data.at(-1)
    for (let tries = 0; (await last())?.attempts !== 1 && tries < 100; tries++) await Bun.sleep(50)
    expect((await last()).last_error).toMatch(
      /^localhost resolves to (127\.0\.0\.1|::1), which is not a global unicast address: loopback/,
    )
    expect(receiver.received).toEqual([])
  })

  test('PATCH changes url, events, description and status; If-Match guards it; a disabled endpoint gets nothing new', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['group.created'],
    })
    const stale = await t.call('PATCH', `/webhook-endpoints/${endpoint.id}`, {
      json: { description: 'x' },
      headers: { ...headers, 'if-match': `"${endpoint.id}.7"` },
    })
    expectEnvelope(stale, 412, 'PRECONDITION_FAILED')
    const patched = await t.call('PATCH', `/webhook-endpoints/${endpoint.id}`, {
      json: { events: ['user.*'], description: 'users only', status: 'disabled' },
      headers: { ...headers, 'if-match': `"${endpoint.id}.1"` },
    })
    expect(patched.body).toMatchObject({
      events: ['user.*'],
      description: 'users only',
      status: 'disabled',
      disabled_reason: 'disabled through the API',
    })
    expect(patched.headers.get('etag')).toBe(`"${endpoint.id}.2"`)
    await makeUser(t, headers, 1)
    await t.deps.outbound.dispatcher.settled()
    await t.deps.outbound.sender.settled()
    expect(receiver.received.map((entry) => entry.body)).toEqual([])
    const enabled = await t.call('PATCH', `/webhook-endpoints/${endpoint.id}`, {
      json: { status: 'enabled' },
      headers,
    })
    expect(enabled.body).toMatchObject({ status: 'enabled', disabled_reason: null })
    await makeUser(t, headers, 2)
    await receiver.until(1)
    expect(receiver.received.map((entry) => entry.payload.data.target)).toEqual([
      { type: 'user', id: '2' },
    ])
    for (const [body, field] of [
      [{}, ''],
      [{ status: 'paused' }, 'status'],
      [{ url: 'gopher://x' }, 'url'],
      [{ events: ['nope'] }, 'events[0]'],
    ] as const) {
      const error = expectEnvelope(
        await t.call('PATCH', `/webhook-endpoints/${endpoint.id}`, { json: body, headers }),
        422,
        'VALIDATION_ERROR',
      )
      if (field !== '') expect(error.details.map((detail) => detail.field)).toContain(field)
    }
    const audit = await t.get(
      `/audit?target_type=webhook_endpoint&target_id=${endpoint.id}&action=webhook_endpoint.updated`,
      { headers },
    )
    expect(
      audit.body.data.map((event: { changes: object }) => Object.keys(event.changes).sort()),
    ).toEqual([
      ['disabled_reason', 'status'],
      ['description', 'disabled_reason', 'events', 'status'],
    ])
  })

  test('rotating the secret: both sign for the overlap; with expires_in 0 only the new one', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['user.created'],
    })
    const rotated = await t.post(
      `/webhook-endpoints/${endpoint.id}/rotate-secret`,
      { expires_in: 3600 },
      { headers },
    )
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).not.toBe(endpoint.secret)
    expect(Date.parse(rotated.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(
      3590_000,
    )
    await makeUser(t, headers, 1)
    await receiver.until(1)
    const [during] = receiver.received
    expect(during?.headers['webhook-signature']?.split(' ')).toHaveLength(2)
    verifyDelivery(during as never, endpoint.secret)
    verifyDelivery(during as never, rotated.body.secret)
    // Without a body: 24 hours of overlap.
    const again = await t.call('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`, {
      headers,
    })
    expect(Date.parse(again.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(
      86_390_000,
    )
    const now = await t.post(
      `/webhook-endpoints/${endpoint.id}/rotate-secret`,
      { expires_in: 0 },
      { headers },
    )
    expect(now.body.previous_secret_expires_at).toBeNull()
    await makeUser(t, headers, 2)
    await receiver.until(2)
    const after = receiver.received[1]
    expect(after?.headers['webhook-signature']?.split(' ')).toHaveLength(1)
    verifyDelivery(after as never, now.body.secret)
    expect(() => verifyDelivery(after as never, again.body.secret)).toThrow()
    expectEnvelope(
      await t.post(
        `/webhook-endpoints/${endpoint.id}/rotate-secret`,
        { expires_in: 700_000 },
        { headers },
      ),
      422,
      'VALIDATION_ERROR',
    )
    const events = await t.get('/audit?action=webhook_endpoint.secret_rotated', { headers })
    expect(events.body.data).toHaveLength(3)
    expect(events.text).not.toContain(now.body.secret)
  })

  test('DELETE takes the endpoint and its delivery log; unknown and malformed ids are 404', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    const endpoint = await createEndpoint(t, headers, { url: receiver.url, events: ['*'] })
    await makeUser(t, headers, 1)
    await receiver.until(1)
    const gone = await t.call('DELETE', `/webhook-endpoints/${endpoint.id}`, { headers })
    expect(gone.body).toEqual({ id: endpoint.id, deleted: true })
    const rows = await dbQuery<{ n: number }>(
      t.deps,
      'SELECT CAST(count(*) AS INTEGER) AS n FROM webhook_deliveries',
    )
    expect(rows[0]?.n).toBe(0)
    for (const path of [
      `/webhook-endpoints/${endpoint.id}`,
      '/webhook-endpoints/abc',
      '/webhook-endpoints/0',
      `/webhook-endpoints/${endpoint.id}/deliveries`,
      '/webhook-endpoints/1/deliveries/x',
    ]) {
      expectEnvelope(await t.get(path, { headers }), 404, 'NOT_FOUND')
    }
    expectEnvelope(
      await t.call('DELETE', `/webhook-endpoints/${endpoint.id}`, { headers }),
      404,
      'NOT_FOUND',
    )
  })

  test('the delivery log pages newest first by cursor; bad cursors and statuses are 422', async () => {
    await using receiver = await startReceiver()
    const { t, headers } = await appWithKey()
    await using _ = t
    const endpoint = await createEndpoint(t, headers, {
      url: receiver.url,
      events: ['user.created'],
    })
    for (let n = 1; n <= 5; n++) await makeUser(t, headers, n)
    await receiver.until(5)
    await t.deps.outbound.sender.settled()
    const path = `/webhook-endpoints/${endpoint.id}/deliveries`
    const first = await t.get(`${path}?limit=2`, { headers })
    expect(
      first.body.data.map(
        (d: { payload: { data: { target: { id: string } } } }) => d.payload.data.target.id,
      ),
    ).toEqual(['5', '4'])
    expect(first.headers.get('link')).toContain(`cursor=${first.body.pagination.next_cursor}`)
    const second = await t.get(`${path}?limit=2&cursor=${first.body.pagination.next_cursor}`, {
      headers,
    })
    expect(
      second.body.data.map(
        (d: { payload: { data: { target: { id: string } } } }) => d.payload.data.target.id,
      ),
    ).toEqual(['3', '2'])
    const one = await t.get(`${path}/${second.body.data[0].id}`, { headers })
    expect(one.body).toEqual(second.body.data[0])
    for (const query of ['cursor=abc', 'cursor=-1', 'status=sent', 'limit=101', 'limit=0']) {
      expectEnvelope(await t.get(`${path}?${query}`, { headers }), 422, 'VALIDATION_ERROR')
    }
    expectEnvelope(await t.post(`${path}/999/retry`, {}, { headers }), 404, 'NOT_FOUND')
  })
})
