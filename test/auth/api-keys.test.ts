import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { dbQuery, expectEnvelope, makeTestApp } from '../helpers/app'
import { apiKey, signedIn } from '../helpers/auth'

describe('/api-keys', () => {
  test('a key made with a key dies with it, at any depth; revoking a child leaves the parent', async () => {
    await using t = await makeTestApp()
    const root = await apiKey(t, 'root')
    const mint = async (by: string, name: string) =>
      (await t.post('/api-keys', { name }, { headers: { 'x-api-key': by } })).body as {
        id: number
        key: string
      }
    const child = await mint(root, 'child')
    const grandchild = await mint(child.key, 'grandchild')
    const sibling = await mint(root, 'sibling')
    const listed = (await t.get('/api-keys', { headers: { 'x-api-key': root } })).body.data
    expect(
      listed.map((k: { name: string; parent_id: number | null }) => [k.name, k.parent_id]),
    ).toEqual([
      ['root', null],
      ['child', 1],
      ['grandchild', child.id],
      ['sibling', 1],
    ])
    const works = async (key: string) =>
      (await t.get('/data', { headers: { 'x-api-key': key } })).status === 200
    expect(
      (await t.call('DELETE', `/api-keys/${sibling.id}`, { headers: { 'x-api-key': root } }))
        .status,
    ).toBe(200)
    expect([await works(root), await works(child.key), await works(sibling.key)]).toEqual([
      true,
      true,
      false,
    ])
    // Revoked with the parent, by the parent's own id, from another key: every descendant goes.
    const other = await apiKey(t, 'other')
    expect(
      (await t.call('DELETE', '/api-keys/1', { headers: { 'x-api-key': other } })).status,
    ).toBe(200)
    expect([await works(root), await works(child.key), await works(grandchild.key)]).toEqual([
      false,
      false,
      false,
    ])
    expect(await works(other)).toBe(true)
    // A revoked key's id is gone: a second revoke is 404.
    expectEnvelope(
      await t.call('DELETE', `/api-keys/${child.id}`, { headers: { 'x-api-key': other } }),
      404,
      'NOT_FOUND',
    )
  })

  test('POST creates a key, shown once; only its hash is stored', async () => {
    await using t = await makeTestApp()
    const admin = await apiKey(t, 'admin')
    const reply = await t.post(
      '/api-keys',
      { name: ' deploy bot ' },
      { headers: { 'x-api-key': admin } },
    )
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({
      id: 2,
      name: 'deploy bot',
      prefix: reply.body.key.slice(0, 11),
      key: expect.stringMatching(/^rk_[A-Za-z0-9_-]{43}$/),
      created_at: expect.any(String),
      parent_id: 1,
      created_by_user: null,
      scopes: ['*'],
      expires_at: null,
      expires_at_clamped: false,
    })
    expect(reply.headers.get('cache-control')).toBe('no-store')
    const dump = JSON.stringify(await dbQuery(t.deps, 'SELECT * FROM api_keys'))
    expect(dump).not.toContain(reply.body.key)
    expect(dump).not.toContain(admin)
    expect((await t.get('/data', { headers: { 'x-api-key': reply.body.key } })).status).toBe(200)
  })

  test('GET lists active keys with the list envelope, X-Total-Count and Link, never the key', async () => {
    await using t = await makeTestApp()
    const admin = await apiKey(t, 'admin')
    for (let i = 0; i < 4; i++)
      await t.deps.apiKeys.create({ name: `k${i}`, scopes: ['*'] }, SYSTEM)
    await t.deps.apiKeys.revoke(3, SYSTEM)
    const reply = await t.get('/api-keys?limit=2&offset=2', { headers: { 'x-api-key': admin } })
    expect(reply.status).toBe(200)
    expect(reply.body.pagination).toEqual({ limit: 2, offset: 2, total: 4 })
    expect(reply.body.data.map((k: { name: string }) => k.name)).toEqual(['k2', 'k3'])
    expect(Object.keys(reply.body.data[0]).sort()).toEqual([
      'created_at',
      'created_by_user',
      'expires_at',
      'id',
      'last_used_at',
      'name',
      'parent_id',
      'prefix',
      'scopes',
    ])
    expect(reply.headers.get('x-total-count')).toBe('4')
    expect(reply.headers.get('link')).toContain('rel="prev"')
    expectEnvelope(
      await t.get('/api-keys?limit=500', { headers: { 'x-api-key': admin } }),
      422,
      'VALIDATION_ERROR',
    )
  })

  test('DELETE revokes; an unknown, already revoked or malformed id is 404', async () => {
    await using t = await makeTestApp()
    const admin = await apiKey(t, 'admin')
    await t.deps.apiKeys.create({ name: 'other', scopes: ['*'] }, SYSTEM)
    const headers = { 'x-api-key': admin }
    expect((await t.call('DELETE', '/api-keys/2', { headers })).body).toEqual({
      id: 2,
      revoked: true,
    })
    for (const id of ['2', '99', 'abc', '0', '1.5', '99999999999999999999']) {
      expectEnvelope(await t.call('DELETE', `/api-keys/${id}`, { headers }), 404, 'NOT_FOUND')
    }
  })

  test('POST validates the name and the body like /users', async () => {
    await using t = await makeTestApp()
    const headers = { 'x-api-key': await apiKey(t) }
    expectEnvelope(await t.post('/api-keys', {}, { headers }), 422, 'VALIDATION_ERROR')
    expectEnvelope(await t.post('/api-keys', { name: '' }, { headers }), 422, 'VALIDATION_ERROR')
    expectEnvelope(
      await t.post('/api-keys', { name: 'x', extra: 1 }, { headers }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.call('POST', '/api-keys', {
        body: 'name=x',
        headers: { ...headers, 'content-type': 'text/plain' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
  })

  test('every route needs keys:write: a member’s credential is 403 naming it, and 401 comes before 422', async () => {
    await using t = await makeTestApp()
    const { token } = await signedIn(t)
    for (const [method, path] of [
      ['POST', '/api-keys'],
      ['GET', '/api-keys'],
      ['DELETE', '/api-keys/1'],
    ] as const) {
      const reply = await t.call(method, path, {
        json: method === 'POST' ? { bad: true } : undefined,
        headers: { authorization: `Bearer ${token}` },
      })
      const refused = expectEnvelope(reply, 403, 'FORBIDDEN')
      expect(refused.details).toEqual([
        { field: 'scope', message: 'keys:write is required', received: 'role member' },
      ])
    }
    const anonymous = await t.post('/api-keys', { bad: true })
    expectEnvelope(anonymous, 401, 'UNAUTHORIZED')
    expect(anonymous.headers.get('www-authenticate')).toStartWith('ApiKey')
  })
})
