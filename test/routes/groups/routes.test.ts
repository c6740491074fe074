import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { expectEnvelope, makeTestApp } from '../../helpers/app'

describe('/groups', () => {
  test('POST creates: 201, Location, ETag, the name trimmed; a name taken in another case is 409', async () => {
    await using t = await makeTestApp()
    const reply = await t.post('/groups', { name: ' Engineering ', description: 'Builds roster' })
    expect(reply.status).toBe(201)
    expect(reply.headers.get('location')).toBe('/groups/1')
    expect(reply.headers.get('etag')).toBe('"1.1"')
    expect(reply.body).toEqual({
      id: 1,
      name: 'Engineering',
      description: 'Builds roster',
      members: [],
      created_at: expect.stringMatching(/Z$/),
      updated_at: reply.body.created_at,
    })
    const taken = expectEnvelope(
      await t.post('/v2/groups', { name: 'ENGINEERING' }),
      409,
      'CONFLICT',
    )
    expect(taken.details[0]?.field).toBe('name')
    // (On PostgreSQL the refused insert used up an id: ids are unique, not gapless.)
    expect((await t.post('/v1/groups', { name: 'Sales' })).headers.get('location')).toMatch(
      /^\/v1\/groups\/\d+$/,
    )
  })

  test('bad bodies are 422 naming the field, and nothing is made', async () => {
    await using t = await makeTestApp()
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'a\u202eb' }, 'name'],
      [{ name: 'x', description: 'd'.repeat(1001) }, 'description'],
      [{ name: 'x', description: 'bell\u0007' }, 'description'],
      [{ name: 'x', members: [1] }, 'members'],
      [{ name: 7 }, 'name'],
    ] as const) {
      const error = expectEnvelope(await t.post('/groups', body), 422, 'VALIDATION_ERROR')
      expect(error.details.map((detail) => detail.field)).toContain(field)
    }
    expect(
      (await t.post('/groups', { name: 'x', description: 'two\nlines\tand a tab' })).status,
    ).toBe(201)
    expect((await t.get('/groups')).body.pagination.total).toBe(1)
  })

  test('the list envelope, X-Total-Count and Link; 304 on a current ETag; malformed ids are 404', async () => {
    await using t = await makeTestApp()
    for (const name of ['a', 'b', 'c']) await t.post('/groups', { name })
    const page = await t.get('/groups?limit=1&offset=1')
    expect(page.body.data.map((group: { name: string }) => group.name)).toEqual(['b'])
    expect(page.body.pagination).toEqual({ limit: 1, offset: 1, total: 3 })
    expect(page.headers.get('x-total-count')).toBe('3')
    expect(page.headers.get('link')).toContain('rel="next"')
    expectEnvelope(await t.get('/groups?limit=101'), 422, 'VALIDATION_ERROR')
    const read = await t.get('/groups/2')
    const etag = read.headers.get('etag') as string
    expect((await t.get('/groups/2', { headers: { 'if-none-match': etag } })).status).toBe(304)
    for (const id of ['99', 'abc', '0', '1.5']) {
      expectEnvelope(await t.get(`/groups/${id}`), 404, 'NOT_FOUND')
    }
  })

  test('PUT and PATCH with If-Match; a stale ETag is 412 and changes nothing', async () => {
    await using t = await makeTestApp()
    await t.post('/groups', { name: 'Ops', description: 'on call' })
    const put = await t.call('PUT', '/groups/1', {
      json: { name: 'Operations', id: 1, members: [] },
      headers: { 'if-match': '"1.1"' },
    })
    expect(put.body).toMatchObject({ name: 'Operations', description: null })
    expect(put.headers.get('etag')).toBe('"1.2"')
    expectEnvelope(
      await t.call('PATCH', '/groups/1', { json: { name: 'x' }, headers: { 'if-match': '"1.1"' } }),
      412,
      'PRECONDITION_FAILED',
    )
    const patched = await t.call('PATCH', '/groups/1', {
      json: { description: 'pager' },
      headers: { 'content-type': 'application/merge-patch+json', 'if-match': '"1.2"' },
    })
    expect(patched.body).toMatchObject({ name: 'Operations', description: 'pager' })
    expectEnvelope(await t.call('PATCH', '/groups/1', { json: {} }), 422, 'VALIDATION_ERROR')
    expectEnvelope(
      await t.call('PUT', '/groups/1', { json: { name: 'y', id: 2 } }),
      422,
      'VALIDATION_ERROR',
    )
  })

  test('membership: PUT and DELETE one user, idempotent; the user record shows its groups and its ETag moves', async () => {
    await using t = await makeTestApp()
    await t.post('/groups', { name: 'Ops' })
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const before = (await t.get('/users/1')).headers.get('etag')
    const joined = await t.call('PUT', '/groups/1/members/1')
    expect(joined.status).toBe(200)
    expect(joined.body.members).toEqual([1])
    expect((await t.call('PUT', '/groups/1/members/1')).body.members).toEqual([1])
    const ada = await t.get('/users/1')
    expect(ada.body.groups).toEqual([1])
    expect(ada.headers.get('etag')).not.toBe(before)
    expect((await t.get('/v2/users')).body.data[0].groups).toEqual([1])
    expectEnvelope(await t.call('PUT', '/groups/1/members/9'), 404, 'NOT_FOUND')
    expectEnvelope(await t.call('PUT', '/groups/9/members/1'), 404, 'NOT_FOUND')
    expect((await t.call('DELETE', '/groups/1/members/1')).body.members).toEqual([])
    expect((await t.call('DELETE', '/groups/1/members/1')).status).toBe(200)
    expect((await t.get('/users/1')).body.groups).toEqual([])
  })

  test('deleting a group leaves its users; deleting a user leaves its groups', async () => {
    await using t = await makeTestApp()
    await t.post('/groups', { name: 'One' })
    await t.post('/groups', { name: 'Two' })
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    await t.call('PUT', '/groups/1/members/1')
    await t.call('PUT', '/groups/2/members/1')
    expect((await t.call('DELETE', '/groups/1')).body).toEqual({ id: 1, deleted: true })
    expect((await t.get('/users/1')).body.groups).toEqual([2])
    await t.call('DELETE', '/users/1')
    expect((await t.get('/groups/2')).body.members).toEqual([])
    expectEnvelope(await t.call('DELETE', '/groups/1'), 404, 'NOT_FOUND')
  })

  test('Idempotency-Key: a retry replays the first answer; another body with the key is 409', async () => {
    await using t = await makeTestApp()
    const headers = { 'idempotency-key': 'group-1' }
    const first = await t.post('/groups', { name: 'Ops' }, { headers })
    const again = await t.post('/groups', { name: 'Ops' }, { headers })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    expectEnvelope(await t.post('/groups', { name: 'Other' }, { headers }), 409, 'CONFLICT')
    expect((await t.get('/groups')).body.pagination.total).toBe(1)
  })

  test('protected mode: users:read reads, users:write writes, a member sees no groups', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = (scopes: string[]) =>
      t.deps.apiKeys
        .create({ name: 'k', scopes: scopes as never }, SYSTEM)
        .then((made) => ({ 'x-api-key': made.key }))
    const writer = await key(['users:write'])
    const reader = await key(['users:read'])
    expect((await t.post('/groups', { name: 'Ops' }, { headers: writer })).status).toBe(201)
    expect((await t.get('/groups/1', { headers: reader })).status).toBe(200)
    const refused = expectEnvelope(
      await t.post('/groups', { name: 'x' }, { headers: reader }),
      403,
      'FORBIDDEN',
    )
    expect(refused.details[0]?.message).toBe('users:write is required')
    expectEnvelope(
      await t.call('PUT', '/groups/1/members/1', { headers: reader }),
      403,
      'FORBIDDEN',
    )
    expectEnvelope(await t.get('/groups'), 401, 'UNAUTHORIZED')
    await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: 'correct horse battery' },
      { headers: writer },
    )
    const login = await t.post('/login', {
      email: 'ada@example.com',
      password: 'correct horse battery',
    })
    const asAda = { authorization: `Bearer ${login.body.access_token}` }
    expectEnvelope(await t.get('/groups', { headers: asAda }), 403, 'FORBIDDEN')
  })
})
