import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../helpers/app'
import { apiKey, basic, PASSWORD, signedIn } from '../helpers/auth'

async function protectedApp() {
  const t = await makeTestApp({ usersAccess: 'protected' })
  const key = await apiKey(t, 'admin')
  return Object.assign(t, { keyHeader: { 'x-api-key': key } })
}

describe('--users-access protected', () => {
  test('reads need a credential: 401 naming every scheme without one', async () => {
    await using t = await protectedApp()
    for (const path of ['/users', '/users/1', '/v2/users']) {
      const reply = await t.get(path)
      expectEnvelope(reply, 401, 'UNAUTHORIZED')
      expect(reply.headers.get('www-authenticate')).toBe(
        'ApiKey, Basic realm="roster", charset="UTF-8", Bearer',
      )
    }
  })

  test('a member reads its own record with any of its credentials; the list and others are 403', async () => {
    await using t = await protectedApp()
    for (const email of ['ada@example.com', 'bob@example.com']) {
      await t.post('/users', { name: 'U', email, password: PASSWORD }, { headers: t.keyHeader })
    }
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string
    const asAda: Record<string, string>[] = [
      { authorization: `Bearer ${login.body.access_token}` },
      { authorization: basic('ada@example.com', PASSWORD) },
      { cookie },
    ]
    for (const headers of asAda) {
      expect((await t.get('/users/1', { headers })).body.email).toBe('ada@example.com')
      for (const path of ['/users', '/v2/users', '/users/2', '/users/export']) {
        const refused = expectEnvelope(await t.get(path, { headers }), 403, 'FORBIDDEN')
        expect(refused.details).toEqual([
          { field: 'scope', message: 'users:read is required', received: 'role member' },
        ])
      }
    }
    expect((await t.get('/users', { headers: t.keyHeader })).status).toBe(200)
  })

  test('creating needs an API key: a user credential is 403, none is 401 (before validation)', async () => {
    await using t = await protectedApp()
    await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: t.keyHeader },
    )
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const asUser = await t.post(
      '/users',
      { name: 'B', email: 'b@example.com' },
      { headers: { authorization: `Bearer ${login.body.access_token}` } },
    )
    expectEnvelope(asUser, 403, 'FORBIDDEN')
    expectEnvelope(await t.post('/users', { name: 7 }), 401, 'UNAUTHORIZED')
    expect((await t.get('/users', { headers: t.keyHeader })).body.pagination.total).toBe(1)
  })

  test('a user may change and delete its own record, not another’s', async () => {
    await using t = await protectedApp()
    for (const email of ['ada@example.com', 'bob@example.com']) {
      await t.post('/users', { name: 'U', email, password: PASSWORD }, { headers: t.keyHeader })
    }
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const asAda = { authorization: `Bearer ${login.body.access_token}` }
    expect(
      (await t.call('PATCH', '/users/1', { json: { name: 'Ada' }, headers: asAda })).status,
    ).toBe(200)
    expectEnvelope(
      await t.call('PATCH', '/users/2', { json: { name: 'x' }, headers: asAda }),
      403,
      'FORBIDDEN',
    )
    expectEnvelope(
      await t.call('PUT', '/users/2', {
        json: { name: 'x', email: 'bob@example.com' },
        headers: asAda,
      }),
      403,
      'FORBIDDEN',
    )
    expectEnvelope(await t.call('DELETE', '/users/2', { headers: asAda }), 403, 'FORBIDDEN')
    expect((await t.call('DELETE', '/users/2', { headers: t.keyHeader })).status).toBe(200)
    expect((await t.call('DELETE', '/users/1', { headers: asAda })).status).toBe(200)
  })

  test('open mode (the default) asks for nothing', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    expect((await t.call('DELETE', `/users/${userId}`)).status).toBe(200)
  })
})
