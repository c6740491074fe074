import { describe, expect, test } from 'bun:test'
import { dbQuery, expectEnvelope, makeTestApp } from '../../helpers/app'
import { basic } from '../../helpers/auth'

const ada = { name: 'Ada Lovelace', email: 'ada@example.com' }

describe('POST /users', () => {
  test('creates a user: 201, the record, Location, stored trimmed', async () => {
    await using t = await makeTestApp()
    const reply = await t.post('/users', { name: '  Ada Lovelace ', email: 'Ada@Example.com' })
    expect(reply.status).toBe(201)
    expect(reply.headers.get('location')).toBe('/users/1')
    expect(reply.body).toEqual({
      id: 1,
      name: 'Ada Lovelace',
      email: 'Ada@Example.com',
      username: 'Ada@Example.com',
      active: true,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: reply.body.created_at,
      role: 'member',
      email_verified_at: null,
      groups: [],
    })
  })

  test('keeps the version prefix in Location', async () => {
    await using t = await makeTestApp()
    expect((await t.post('/v1/users', ada)).headers.get('location')).toBe('/v1/users/1')
    const v2 = await t.post('/v2/users', { name: 'B', email: 'b@example.com' })
    expect(v2.headers.get('location')).toBe('/v2/users/2')
    expect(v2.headers.get('api-version')).toBe('2')
  })

  test('a username: given or the email; unique without regard to case; changed by PATCH', async () => {
    await using t = await makeTestApp()
    const made = await t.post('/users', {
      name: 'Ada',
      email: 'ada@example.com',
      username: 'Ada.L',
    })
    expect(made.body.username).toBe('Ada.L')
    const taken = expectEnvelope(
      await t.post('/users', { name: 'B', email: 'b@example.com', username: 'ADA.l' }),
      409,
      'CONFLICT',
    )
    expect(taken.details).toEqual([
      { field: 'username', message: 'is already in use', received: 'ADA.l' },
    ])
    // A username that is the same as a username made from an email clashes too.
    await t.post('/users', { name: 'C', email: 'c@example.com' })
    expectEnvelope(
      await t.post('/users', { name: 'E', email: 'e@example.com', username: 'C@example.com' }),
      409,
      'CONFLICT',
    )
    const patched = await t.call('PATCH', `/users/${made.body.id}`, { json: { username: 'ada' } })
    expect(patched.body.username).toBe('ada')
    for (const username of ['', ' ada', 'ada ', 'a\u0000b', 'a\u202eb', 'x'.repeat(255)]) {
      const error = expectEnvelope(
        await t.post('/users', { name: 'D', email: 'd@example.com', username }),
        422,
        'VALIDATION_ERROR',
      )
      expect(error.details[0]?.field).toBe('username')
    }
    const events = await t.deps.audit.page({ action: 'user.*' }, { limit: 10, before: null })
    expect(events.data[0]?.changes).toEqual({ username: { before: 'Ada.L', after: 'ada' } })
    expect(events.data.at(-1)?.changes?.username).toEqual({ before: null, after: 'Ada.L' })
  })

  test('refuses a duplicate email without regard to case: 409 with a detail for email', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const reply = await t.post('/users', { name: 'Other', email: 'ADA@example.COM' })
    const error = expectEnvelope(reply, 409, 'CONFLICT')
    expect(error.details).toEqual([
      { field: 'email', message: 'is already in use', received: 'ADA@example.COM' },
    ])
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })

  test('stores the password as an argon2id hash and never returns it', async () => {
    await using t = await makeTestApp()
    const reply = await t.post('/users', { ...ada, password: 'correct horse battery' })
    expect(reply.text).not.toContain('correct horse')
    expect(reply.text).not.toContain('password')
    const [row] = await dbQuery<{ password_hash: string }>(
      t.deps,
      'SELECT password_hash FROM users',
    )
    expect(row?.password_hash).toStartWith('$argon2id$')
    expect(await Bun.password.verify('correct horse battery', row?.password_hash ?? '')).toBe(true)
  })

  test('never reuses an id, even after a delete', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    await t.call('DELETE', '/users/1')
    const reply = await t.post('/users', ada)
    expect(reply.body.id).toBe(2)
  })
})

describe('GET /users/{id}', () => {
  test('answers the record with an ETag, and 304 to If-None-Match', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const reply = await t.get('/users/1')
    expect(reply.status).toBe(200)
    expect(reply.body.email).toBe('ada@example.com')
    const etag = reply.headers.get('etag') as string
    expect(etag).toMatch(/^"[^"]+"$/)
    const again = await t.get('/users/1', { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(again.text).toBe('')
    expect(again.headers.get('etag')).toBe(etag)
    expect((await t.get('/users/1', { headers: { 'if-none-match': `W/${etag}` } })).status).toBe(
      304,
    )
    expect((await t.get('/users/1', { headers: { 'if-none-match': '"other", *' } })).status).toBe(
      304,
    )
    expect((await t.get('/users/1', { headers: { 'if-none-match': '"other"' } })).status).toBe(200)
  })

  test.each([
    'abc',
    '0',
    '-1',
    '1.5',
    '1e3',
    '01',
    '0x10',
    '99999999999999999999',
    '9007199254740992',
    '%20',
  ])('answers a malformed id %p like a missing one: 404', async (id) => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    expectEnvelope(await t.get(`/users/${id}`), 404, 'NOT_FOUND')
    expectEnvelope(await t.call('DELETE', `/users/${id}`), 404, 'NOT_FOUND')
    expectEnvelope(await t.call('PATCH', `/users/${id}`, { json: { name: 'x' } }), 404, 'NOT_FOUND')
  })

  test('the largest id is looked up exactly, not rounded; beyond it is 404', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    // SQLite's ids run to 2^53-1 (the largest an id in a URL may be); PostgreSQL's to 2^31-1.
    const largest = t.deps.config.databaseUrl === null ? 9007199254740991 : 2147483647
    await dbQuery(
      t.deps,
      "INSERT INTO users (id, name, email, email_key, created_at, updated_at) VALUES (?, 'Max', 'max@example.com', 'max@example.com', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
      largest,
    )
    expect((await t.get(`/users/${largest}`)).body.name).toBe('Max')
    expectEnvelope(await t.get('/users/9007199254740993'), 404, 'NOT_FOUND')
    if (largest !== 9007199254740991) {
      expectEnvelope(await t.get('/users/9007199254740991'), 404, 'NOT_FOUND')
      const put = await t.call('PUT', '/users/9007199254740991', { json: ada })
      expectEnvelope(put, 404, 'NOT_FOUND')
    }
  })
})

describe('PUT /users/{id}', () => {
  test('replaces name and email and bumps the ETag', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const before = await t.get('/users/1')
    const reply = await t.call('PUT', '/users/1', {
      json: { name: 'Ada King', email: 'king@example.com' },
    })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ id: 1, name: 'Ada King', email: 'king@example.com' })
    expect(reply.headers.get('etag')).not.toBe(before.headers.get('etag'))
    expect(reply.body.created_at).toBe(before.body.created_at)
  })

  test('ignores echoed id, created_at, updated_at when they match, refuses them when not', async () => {
    await using t = await makeTestApp()
    const created = (await t.post('/users', ada)).body
    const ok = await t.call('PUT', '/users/1', { json: { ...created, name: 'Echo' } })
    expect(ok.status).toBe(200)
    const bad = await t.call('PUT', '/users/1', {
      json: { ...created, id: 2, created_at: '2000-01-01T00:00:00.000Z', name: 'Echo' },
    })
    const error = expectEnvelope(bad, 422, 'VALIDATION_ERROR')
    expect(error.details.map((d) => d.field).sort()).toEqual(['created_at', 'id', 'updated_at'])
    expect((await t.get('/users/1')).body.name).toBe('Echo')
  })

  test('requires name and email, naming both', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const error = expectEnvelope(
      await t.call('PUT', '/users/1', { json: { password: 'long enough' } }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details).toEqual([
      { field: 'name', message: 'is required', received: '' },
      { field: 'email', message: 'is required', received: '' },
    ])
  })

  test('412 when If-Match does not match, and nothing changes', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const etag = (await t.get('/users/1')).headers.get('etag') as string
    const stale = await t.call('PUT', '/users/1', {
      json: { name: 'New', email: 'new@example.com' },
      headers: { 'if-match': '"1.999"' },
    })
    expectEnvelope(stale, 412, 'PRECONDITION_FAILED')
    expect((await t.get('/users/1')).body.name).toBe('Ada Lovelace')
    const fresh = await t.call('PUT', '/users/1', {
      json: { name: 'New', email: 'new@example.com' },
      headers: { 'if-match': etag },
    })
    expect(fresh.status).toBe(200)
    const weak = await t.call('PUT', '/users/1', {
      json: { name: 'Newer', email: 'new@example.com' },
      headers: { 'if-match': `W/${fresh.headers.get('etag')}` },
    })
    expectEnvelope(weak, 412, 'PRECONDITION_FAILED')
  })

  test("If-Match: a list holding the current tag, or *, passes; another user's tag or junk is 412", async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    await t.post('/users', { name: 'Bob', email: 'bob@example.com' })
    const patch = (ifMatch: string, name: string) =>
      t.call('PATCH', '/users/1', { json: { name }, headers: { 'if-match': ifMatch } })
    expect((await patch('"2.1", "1.1"', 'Listed')).status).toBe(200)
    expect((await patch('*', 'Any')).status).toBe(200)
    // User 1 is at version 3 now; user 2's tag at that version is not user 1's.
    expectEnvelope(await patch('"2.3"', 'Other'), 412, 'PRECONDITION_FAILED')
    expectEnvelope(await patch('"01.3"', 'Padded'), 412, 'PRECONDITION_FAILED')
    expectEnvelope(await patch('junk', 'Junk'), 412, 'PRECONDITION_FAILED')
    expectEnvelope(await patch('', 'Empty'), 412, 'PRECONDITION_FAILED')
    expect((await t.get('/users/1')).body.name).toBe('Any')
    expect((await patch('W/"1.3", "1.3"', 'Strong one listed')).status).toBe(200)
  })

  test('409 when the new email belongs to someone else', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    await t.post('/users', { name: 'Bob', email: 'bob@example.com' })
    const reply = await t.call('PUT', '/users/2', {
      json: { name: 'Bob', email: 'ADA@example.com' },
    })
    expectEnvelope(reply, 409, 'CONFLICT')
    expect((await t.get('/users/2')).body.email).toBe('bob@example.com')
  })

  test('404 for a missing user', async () => {
    await using t = await makeTestApp()
    expectEnvelope(await t.call('PUT', '/users/7', { json: ada }), 404, 'NOT_FOUND')
  })
})

describe('PATCH /users/{id}', () => {
  test('changes only the given fields; merge-patch+json is accepted', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const reply = await t.call('PATCH', '/users/1', {
      body: JSON.stringify({ name: 'Countess' }),
      headers: { 'content-type': 'application/merge-patch+json' },
    })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ name: 'Countess', email: 'ada@example.com' })
    expect(reply.body.updated_at >= reply.body.created_at).toBe(true)
  })

  test('an empty object is a VALIDATION_ERROR', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const error = expectEnvelope(
      await t.call('PATCH', '/users/1', { json: {} }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details).toEqual([
      {
        field: 'body',
        message: 'must contain at least one of name, email, username, password, role, active',
        received: '{}',
      },
    ])
  })

  test('null is not a way to clear a field', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const error = expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { name: null } }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details[0]).toMatchObject({ field: 'name', received: 'null' })
  })

  test('changes the password hash', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { ...ada, password: 'first password' })
    const hash = async () =>
      (await dbQuery<{ h: string }>(t.deps, 'SELECT password_hash AS h FROM users'))[0]?.h
    const before = await hash()
    await t.call('PATCH', '/users/1', {
      json: { password: 'second password', current_password: 'first password' },
      headers: { authorization: basic('ada@example.com', 'first password') },
    })
    expect(await hash()).not.toBe(before)
    expect(await Bun.password.verify('second password', (await hash()) ?? '')).toBe(true)
  })
})

describe('DELETE /users/{id}', () => {
  test('answers { id, deleted: true } and the user is gone', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const reply = await t.call('DELETE', '/users/1')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ id: 1, deleted: true })
    expectEnvelope(await t.get('/users/1'), 404, 'NOT_FOUND')
    expectEnvelope(await t.call('DELETE', '/users/1'), 404, 'NOT_FOUND')
  })

  test('412 with a stale If-Match, 200 with the current one', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const etag = (await t.get('/users/1')).headers.get('etag') as string
    await t.call('PATCH', '/users/1', { json: { name: 'Changed' } })
    expectEnvelope(
      await t.call('DELETE', '/users/1', { headers: { 'if-match': etag } }),
      412,
      'PRECONDITION_FAILED',
    )
    const current = (await t.get('/users/1')).headers.get('etag') as string
    expect((await t.call('DELETE', '/users/1', { headers: { 'if-match': current } })).status).toBe(
      200,
    )
  })
})

describe('Idempotency-Key', () => {
  test('a retry with the same key and body replays the first answer', async () => {
    await using t = await makeTestApp()
    const headers = { 'idempotency-key': 'create-ada-1' }
    const first = await t.post('/users', ada, { headers })
    const second = await t.post('/users', { email: ada.email, name: ada.name }, { headers })
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    expect(second.headers.get('location')).toBe('/users/1')
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })

  test('the same key with another body is 409 CONFLICT', async () => {
    await using t = await makeTestApp()
    const headers = { 'idempotency-key': 'k1' }
    await t.post('/users', ada, { headers })
    const reply = await t.post('/users', { ...ada, name: 'Someone Else' }, { headers })
    const error = expectEnvelope(reply, 409, 'CONFLICT')
    expect(error.details[0]?.field).toBe('Idempotency-Key')
  })

  test('concurrent requests with one key create one user', async () => {
    await using t = await makeTestApp()
    const headers = { 'idempotency-key': 'race' }
    const replies = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.post('/users', { ...ada, password: 'hashing takes time' }, { headers }),
      ),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201))
    expect(new Set(replies.map((r) => r.body.id))).toEqual(new Set([1]))
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })

  test('an answer is replayed for 24 hours, then the key is free again', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    await using t = await makeTestApp({}, () => new Date(clock))
    const headers = { 'idempotency-key': 'daily' }
    await t.post('/users', ada, { headers })
    clock += 23 * 3600_000
    expect((await t.post('/users', ada, { headers })).headers.get('idempotent-replayed')).toBe(
      'true',
    )
    clock += 2 * 3600_000
    const later = await t.post('/users', { name: 'New', email: 'new@example.com' }, { headers })
    expect(later.status).toBe(201)
    expect(later.body.id).toBe(2)
  })

  test('a malformed key is a VALIDATION_ERROR that names the header', async () => {
    await using t = await makeTestApp()
    const reply = await t.post('/users', ada, { headers: { 'idempotency-key': 'x'.repeat(256) } })
    const error = expectEnvelope(reply, 422, 'VALIDATION_ERROR')
    expect(error.details[0]?.field).toBe('Idempotency-Key')
    expect((await t.get('/users')).body.pagination.total).toBe(0)
  })

  test('the stored fingerprint does not contain the password', async () => {
    await using t = await makeTestApp()
    await t.post(
      '/users',
      { ...ada, password: 'hunter2hunter2' },
      { headers: { 'idempotency-key': 'p' } },
    )
    const rows = await dbQuery<{ key: string; fingerprint: string }>(
      t.deps,
      'SELECT * FROM idempotency_keys',
    )
    // The answer was stored, with a fingerprint of the body: none of it the password.
    expect(rows.map((row) => [row.key, row.fingerprint.length > 0])).toEqual([['p', true]])
    expect(JSON.stringify(rows)).not.toContain('hunter2')
  })
})
