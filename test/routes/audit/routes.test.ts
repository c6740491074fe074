import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { MAX_FAILURES_PER_ADDRESS } from '../../../src/auth/limiter'
import { expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { apiKey, basic, form, PASSWORD } from '../../helpers/auth'
import { multipartBody, multipartType } from '../../helpers/multipart'

interface Event {
  id: string
  action: string
  actor: { type: string; id: string | null }
  target: { type: string; id: string | null }
  request_id: string | null
  changes: Record<string, unknown> | null
}

const auditOf = async (t: TestApp, key: string, query = '') => {
  const reply = await t.get(`/audit${query}`, { headers: { 'x-api-key': key } })
  expect(reply.status).toBe(200)
  return reply
}

describe('GET /audit', () => {
  test("a user's life through the API: who, which request, and the fields that changed", async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const keyId = String((await t.deps.apiKeys.list({ limit: 1, offset: 0 })).data[0]?.id)
    const headers = { 'x-api-key': key, 'x-request-id': 'req-audit-1' }
    const created = await t.post(
      '/users',
      { name: 'Ann', email: 'ann@example.com', password: 'a long password' },
      { headers },
    )
    const id = created.body.id as number
    await t.call('PATCH', `/users/${id}`, {
      json: { name: 'Anne', password: 'another long one' },
      headers,
    })
    // Nothing changed: no event. A stale If-Match: refused, no event.
    await t.call('PATCH', `/users/${id}`, { json: { name: 'Anne' }, headers })
    const stale = await t.call('PATCH', `/users/${id}`, {
      json: { name: 'X' },
      headers: { ...headers, 'if-match': '"1"' },
    })
    expect(stale.status).toBe(412)
    await t.call('DELETE', `/users/${id}`, { headers })

    const { body } = await auditOf(t, key, '?target_type=user')
    const events = body.data as Event[]
    expect(events.map((event) => event.action)).toEqual([
      'user.deleted',
      'user.updated',
      'user.created',
    ])
    for (const event of events) {
      expect(event).toMatchObject({
        actor: { type: 'api_key', id: keyId },
        target: { type: 'user', id: String(id) },
        request_id: 'req-audit-1',
      })
    }
    expect(events[2]?.changes).toEqual({
      name: { before: null, after: 'Ann' },
      email: { before: null, after: 'ann@example.com' },
      role: { before: null, after: 'member' },
    })
    expect(events[1]?.changes).toEqual({
      name: { before: 'Ann', after: 'Anne' },
      password: { changed: true },
    })
    expect(events[0]?.changes).toEqual({
      name: { before: 'Anne', after: null },
      email: { before: 'ann@example.com', after: null },
      role: { before: 'member', after: null },
    })
    expect(JSON.stringify(body)).not.toMatch(/argon2|long password|long one/)
    const one = await t.get(`/audit/${events[1]?.id}`, { headers })
    expect(one.body).toEqual(events[1])
  })

  test("a group's life: created, renamed, members in and out (each once), deleted", async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const headers = { 'x-api-key': key }
    const ann = (await t.post('/users', { name: 'Ann', email: 'ann@example.com' }, { headers }))
      .body.id as number
    const group = (await t.post('/groups', { name: 'Ops', description: null }, { headers })).body
      .id as number
    await t.call('PATCH', `/groups/${group}`, { json: { name: 'Ops team' }, headers })
    await t.call('PATCH', `/groups/${group}`, { json: { name: 'Ops team' }, headers })
    await t.call('PUT', `/groups/${group}/members/${ann}`, { headers })
    await t.call('PUT', `/groups/${group}/members/${ann}`, { headers })
    await t.call('DELETE', `/groups/${group}/members/${ann}`, { headers })
    await t.call('PUT', `/groups/${group}/members/${ann}`, { headers })
    await t.call('DELETE', `/groups/${group}`, { headers })
    const { body } = await auditOf(t, key, '?target_type=group')
    expect(
      (body.data as Event[]).map((event) => [event.action, event.target.id, event.changes]),
    ).toEqual([
      [
        'group.deleted',
        String(group),
        {
          name: { before: 'Ops team', after: null },
          members: { before: [ann], after: null },
        },
      ],
      ['group.member_added', String(group), { member: { before: null, after: ann } }],
      ['group.member_removed', String(group), { member: { before: ann, after: null } }],
      ['group.member_added', String(group), { member: { before: null, after: ann } }],
      ['group.updated', String(group), { name: { before: 'Ops', after: 'Ops team' } }],
      ['group.created', String(group), { name: { before: null, after: 'Ops' } }],
    ])
  })

  test('keys: made with their scopes, and a revocation names every key it took', async () => {
    await using t = await makeTestApp()
    const root = await apiKey(t)
    const made = await t.post(
      '/api-keys',
      { name: 'minter', scopes: ['audit:read', 'keys:write'] },
      { headers: { 'x-api-key': root } },
    )
    const child = await t.post(
      '/api-keys',
      { name: 'grandchild' },
      {
        headers: { 'x-api-key': made.body.key },
      },
    )
    await t.call('DELETE', `/api-keys/${made.body.id}`, { headers: { 'x-api-key': root } })
    const { body } = await auditOf(t, root, '?target_type=api_key')
    expect(
      (body.data as Event[]).map((event) => [event.action, event.target.id, event.actor.type]),
    ).toEqual([
      ['api_key.revoked', String(child.body.id), 'api_key'],
      ['api_key.revoked', String(made.body.id), 'api_key'],
      ['api_key.created', String(child.body.id), 'api_key'],
      ['api_key.created', String(made.body.id), 'api_key'],
      // The test's own key, made as the CLI makes one (no request).
      ['api_key.created', '1', 'system'],
    ])
    expect((body.data as Event[])[3]?.changes).toEqual({
      name: { before: null, after: 'minter' },
      scopes: { before: null, after: ['keys:write', 'audit:read'] },
      parent_id: { before: null, after: 1 },
    })
    expect(JSON.stringify(body)).not.toContain(made.body.key)
  })

  test('uploads: what an upload holds when made, and its deletion; a refused upload leaves no event', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const headers = { 'x-api-key': key }
    const parts = [
      { name: 'description', data: 'minutes' },
      { name: 'file', filename: 'notes.txt', contentType: 'text/plain', data: 'hello' },
    ]
    const made = await t.call('POST', '/upload', {
      body: multipartBody(parts),
      headers: { 'content-type': multipartType(), ...headers },
    })
    expect(made.status).toBe(201)
    const refused = await t.call('POST', '/upload', {
      body: multipartBody([{ name: 'description', data: 'no file' }]),
      headers: { 'content-type': multipartType(), ...headers },
    })
    expect(refused.status).toBe(422)
    await t.call('DELETE', `/uploads/${made.body.id}`, { headers })
    const { body } = await auditOf(t, key, '?target_type=upload')
    const events = body.data as Event[]
    expect(events.map((event) => [event.action, event.target.id])).toEqual([
      ['upload.deleted', made.body.id],
      ['upload.created', made.body.id],
    ])
    expect(events[1]?.changes).toEqual({
      description: { before: null, after: 'minutes' },
      public: { before: null, after: false },
      files: {
        before: null,
        after: [
          {
            id: made.body.files[0].id,
            field: 'file',
            filename: 'notes.txt',
            content_type: 'text/plain',
            size: 5,
            sha256: made.body.files[0].sha256,
          },
        ],
      },
    })
  })

  test('sign-ins: a session made and ended, failures, and a lockout as one event', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const ada = await t.post('/users', {
      name: 'Ada',
      email: 'ada@example.com',
      password: PASSWORD,
    })
    const login = await t.call('POST', '/login', {
      ...form({ email: 'Ada@example.com', password: PASSWORD }),
      headers: { ...form({}).headers, 'x-request-id': 'req-login' },
    })
    expect(login.status).toBe(200)
    await t.call('POST', '/logout', {
      headers: { authorization: `Bearer ${login.body.access_token}` },
    })
    await t.call('POST', '/login', form({ email: 'nobody@example.com', password: 'whatever1' }))
    await t.get('/me', { headers: { authorization: basic('ada@example.com', 'wrong password') } })
    for (let n = 0; n < MAX_FAILURES_PER_ADDRESS + 3; n++) {
      await t.call('POST', '/login', form({ email: 'ada@example.com', password: 'not it at all' }))
    }
    const { body } = await auditOf(t, key, '?limit=100')
    const events = (body.data as Event[]).filter((event) => event.target.type !== 'user')
    const summary = events.map((event) => `${event.action} ${event.actor.id} ${event.target.id}`)
    const id = String(ada.body.id)
    const failures = MAX_FAILURES_PER_ADDRESS - 1 // the Basic one counted too
    expect(summary).toEqual([
      `login.locked null ada@example.com`,
      ...Array(failures).fill(`login.failed ${id} ada@example.com`),
      `login.failed ${id} ada@example.com`,
      'login.failed null nobody@example.com',
      `access_token.revoked ${id} ${events[failures + 3]?.target.id}`,
      `session.created ${id} ${events[failures + 4]?.target.id}`,
      `api_key.created null 1`,
    ])
    const created = events[failures + 4]
    expect(created?.request_id).toBe('req-login')
    expect(created?.changes).toEqual({ method: { before: null, after: 'password' } })
    expect(created?.target.id).toMatch(/^[0-9a-f]{16}$/)
    expect(JSON.stringify(body)).not.toContain(login.body.access_token)
  })

  test('newest first by cursor; filters combine, and every link repeats them', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const headers = { 'x-api-key': key }
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      await t.post('/users', { name, email: `${name}@example.com` }, { headers })
    }
    await t.call('PATCH', '/users/2', { json: { name: 'bee' }, headers })
    const first = await auditOf(t, key, '?action=user.created&limit=2')
    expect(first.body.data.map((event: Event) => event.target.id)).toEqual(['5', '4'])
    const next = first.body.pagination.next_cursor as string
    expect(first.body.pagination).toEqual({ limit: 2, next_cursor: next })
    expect(first.headers.get('link')).toBe(
      `<http://localhost/audit?action=user.created&limit=2&cursor=${next}>; rel="next"`,
    )
    const second = await auditOf(t, key, `?action=user.created&limit=2&cursor=${next}`)
    const third = await auditOf(
      t,
      key,
      `?action=user.created&limit=2&cursor=${second.body.pagination.next_cursor}`,
    )
    expect(
      [...second.body.data, ...third.body.data].map((event: Event) => event.target.id),
    ).toEqual(['3', '2', '1'])
    expect(third.body.pagination.next_cursor).toBeNull()
    expect(third.headers.get('link')).toBe('')
    const ofTwo = await auditOf(t, key, '?target_type=user&target_id=2')
    expect(ofTwo.body.data.map((event: Event) => event.action)).toEqual([
      'user.updated',
      'user.created',
    ])
    const kinds = await auditOf(
      t,
      key,
      '?action=user.*&actor_type=api_key&since=2000-01-01T00:00:00Z',
    )
    expect(kinds.body.data).toHaveLength(6)
    expect((await auditOf(t, key, '?until=2000-01-01T00:00:00Z')).body.data).toEqual([])
    expect((await auditOf(t, key, '?actor_type=cli')).body.data).toEqual([])
  })

  test('bad parameters are one 422 naming each; nothing is read past them', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const headers = { 'x-api-key': key }
    const error = expectEnvelope(
      await t.get(
        '/audit?limit=0&cursor=abc&actor_type=robot&since=yesterday&until=2026-13-01T00:00:00Z',
        { headers },
      ),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details.map((detail) => detail.field).sort()).toEqual([
      'actor_type',
      'cursor',
      'limit',
      'since',
      'until',
    ])
    for (const query of [
      `?action=${'x'.repeat(201)}`,
      '?target_id=1&target_id=2',
      '?actor_id=a%00b',
      '?cursor=evt_0',
      '?cursor=evt_99999999999999999999',
    ]) {
      expectEnvelope(await t.get(`/audit${query}`, { headers }), 422, 'VALIDATION_ERROR')
    }
    for (const id of ['evt_999', 'evt_0', '1', 'evt_1x', 'evt_-1']) {
      expectEnvelope(await t.get(`/audit/${id}`, { headers }), 404, 'NOT_FOUND')
    }
  })

  test('only an admin or a key with audit:read reads it', async () => {
    await using t = await makeTestApp()
    expectEnvelope(await t.get('/audit'), 401, 'UNAUTHORIZED')
    const usersOnly = (await t.deps.apiKeys.create({ name: 'u', scopes: ['users:write'] }, SYSTEM))
      .key
    expectEnvelope(
      await t.get('/v2/audit', { headers: { 'x-api-key': usersOnly } }),
      403,
      'FORBIDDEN',
    )
    const reader = (await t.deps.apiKeys.create({ name: 'r', scopes: ['audit:read'] }, SYSTEM)).key
    const reply = await t.get('/v1/audit', { headers: { 'x-api-key': reader } })
    expect({ status: reply.status, version: reply.headers.get('api-version') }).toEqual({
      status: 200,
      version: '1',
    })
  })
})
