import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { accessTable, guardOf, type Operation, RULES } from '../../src/routes/authorisation'
import { expectEnvelope, makeTestApp } from '../helpers/app'
import { PASSWORD, signedIn } from '../helpers/auth'

type RouteEntry = {
  method: string
  path: string
  hooks: { detail?: { security?: unknown; hide?: boolean } }
}

/** The app's routes as the unversioned mount names them, with what each declared. */
function declaredRoutes(routes: readonly RouteEntry[]) {
  return routes
    .filter((route) => route.path !== '/*')
    .map((route) => ({
      operation: `${route.method} ${route.path.replace(/^\/v[12](?=\/)/, '')}`,
      detail: route.hooks.detail ?? {},
    }))
}

describe('the authorisation table', () => {
  for (const mode of ['open', 'protected'] as const) {
    test(`every route of the app (every mount) has a rule, and its documented security is the rule's (${mode})`, async () => {
      await using t = await makeTestApp({ usersAccess: mode })
      const declared = declaredRoutes(t.app.routes as unknown as RouteEntry[])
      const unruled = declared.filter(({ operation }) => !(operation in RULES))
      expect(unruled.map(({ operation }) => operation)).toEqual([])
      for (const { operation, detail } of declared) {
        if (detail.hide === true) continue
        expect({ operation, security: detail.security ?? [] }).toEqual({
          operation,
          security: guardOf(operation as Operation, mode).security,
        })
      }
      const routed = new Set(declared.map(({ operation }) => operation))
      expect(Object.keys(RULES).filter((operation) => !routed.has(operation))).toEqual([])
    })
  }

  test('the OpenAPI document names the scope each operation needs', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const document = (await t.get('/swagger/json')).body
    const security = (path: string, method: string) => document.paths[path][method].security
    expect(security('/users', 'get')).toContainEqual({ apiKeyHeader: ['users:read'] })
    expect(security('/users', 'post')).toContainEqual({ session: ['users:write'] })
    expect(security('/api-keys', 'post')).toContainEqual({ bearerApiKey: ['keys:write'] })
    expect(security('/webhooks/events', 'get')).toContainEqual({ apiKeyQuery: ['webhooks:read'] })
    expect(security('/metrics', 'get')).toContainEqual({ apiKeyHeader: ['metrics:read'] })
    expect(security('/me', 'get')).toEqual([{ bearer: [] }, { session: [] }])
  })
})

describe('scoped API keys over HTTP', () => {
  async function keyWith(t: Awaited<ReturnType<typeof makeTestApp>>, scopes: string[]) {
    const made = await t.deps.apiKeys.create(
      { name: scopes.join(' '), scopes: scopes as never },
      SYSTEM,
    )
    return { 'x-api-key': made.key }
  }

  test('a key does what its scopes say, and 403 names the scope it lacks', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const reader = await keyWith(t, ['users:read'])
    expect((await t.get('/users', { headers: reader })).status).toBe(200)
    const refused = expectEnvelope(
      await t.post('/users', { name: 'A', email: 'a@example.com' }, { headers: reader }),
      403,
      'FORBIDDEN',
    )
    expect(refused.message).toBe('This operation needs the users:write scope')
    expect(refused.details).toEqual([
      { field: 'scope', message: 'users:write is required', received: 'users:read' },
    ])
    for (const path of ['/uploads', '/webhooks/events', '/api-keys', '/metrics']) {
      expectEnvelope(await t.get(path, { headers: reader }), 403, 'FORBIDDEN')
    }
  })

  test('users:write includes users:read; metrics:read reads the metrics and nothing else', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const writer = await keyWith(t, ['users:write'])
    expect(
      (await t.post('/users', { name: 'A', email: 'a@example.com' }, { headers: writer })).status,
    ).toBe(201)
    expect((await t.get('/users/1', { headers: writer })).status).toBe(200)
    const scraper = await keyWith(t, ['metrics:read'])
    expect((await t.get('/metrics', { headers: scraper })).status).toBe(200)
    expectEnvelope(await t.get('/users', { headers: scraper }), 403, 'FORBIDDEN')
  })

  test('a key made through the API has at most its creator’s scopes; left out, the creator’s', async () => {
    await using t = await makeTestApp()
    const minter = await keyWith(t, ['keys:write', 'users:read'])
    const inherited = await t.post('/api-keys', { name: 'child' }, { headers: minter })
    expect(inherited.body.scopes).toEqual(['users:read', 'keys:write'])
    const narrower = await t.post(
      '/api-keys',
      { name: 'reader', scopes: ['users:read'] },
      { headers: minter },
    )
    expect(narrower.status).toBe(201)
    expect(narrower.body).toMatchObject({ scopes: ['users:read'], parent_id: 1 })
    for (const scopes of [['users:write'], ['*'], ['users:read', 'uploads:read']]) {
      const wider = expectEnvelope(
        await t.post('/api-keys', { name: 'wider', scopes }, { headers: minter }),
        403,
        'FORBIDDEN',
      )
      expect(wider.details[0]?.field).toBe('scopes')
    }
    expect((await t.deps.apiKeys.list({ limit: 100, offset: 0 })).total).toBe(3)
  })

  test('bad scopes and expiries are 422 with the field named; nothing is made', async () => {
    await using t = await makeTestApp()
    const headers = await keyWith(t, ['*'])
    for (const body of [
      { name: 'x', scopes: [] },
      { name: 'x', scopes: ['users:admin'] },
      { name: 'x', scopes: 'users:read' },
      { name: 'x', scopes: ['users:read', 'users:read'] },
      { name: 'x', expires_at: 'tomorrow' },
      { name: 'x', expires_at: '2001-01-01T00:00:00Z' },
    ]) {
      const error = expectEnvelope(
        await t.post('/api-keys', body, { headers }),
        422,
        'VALIDATION_ERROR',
      )
      expect(error.details[0]?.field).toStartWith(Object.keys(body)[1] as string)
    }
    expect((await t.deps.apiKeys.list({ limit: 100, offset: 0 })).total).toBe(1)
  })

  test('an expired key is 401 like a revoked one; expires_at is listed', async () => {
    await using t = await makeTestApp()
    const headers = await keyWith(t, ['*'])
    const soon = new Date(Date.now() + 1500).toISOString()
    const made = await t.post('/api-keys', { name: 'brief', expires_at: soon }, { headers })
    expect(made.body.expires_at).toBe(soon)
    const brief = { 'x-api-key': made.body.key }
    expect((await t.get('/data', { headers: brief })).status).toBe(200)
    await Bun.sleep(1600)
    expectEnvelope(await t.get('/data', { headers: brief }), 401, 'UNAUTHORIZED')
    const listed = (await t.get('/api-keys', { headers })).body.data
    expect(listed.map((key: { expires_at: string | null }) => key.expires_at)).toEqual([null, soon])
  })
})

describe('roles over HTTP', () => {
  async function withAdmin(t: Awaited<ReturnType<typeof makeTestApp>>) {
    const key = {
      'x-api-key': (await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)).key,
    }
    await t.post(
      '/users',
      { name: 'Root', email: 'root@example.com', password: PASSWORD, role: 'admin' },
      { headers: key },
    )
    const login = await t.post('/login', { email: 'root@example.com', password: PASSWORD })
    return { key, admin: { authorization: `Bearer ${login.body.access_token}` } }
  }

  test('an admin’s token does what an all-scopes key does', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { admin } = await withAdmin(t)
    expect((await t.get('/users', { headers: admin })).body.data[0].role).toBe('admin')
    expect(
      (await t.post('/api-keys', { name: 'from admin' }, { headers: admin })).body,
    ).toMatchObject({
      scopes: ['*'],
      parent_id: null,
    })
    for (const path of ['/uploads', '/webhooks/events', '/users/export', '/metrics', '/data']) {
      expect({ path, status: (await t.get(path, { headers: admin })).status }).toEqual({
        path,
        status: 200,
      })
    }
  })

  test('only an admin or a key with * gives a role; a member cannot promote itself, even in open mode', async () => {
    await using t = await makeTestApp()
    const { token, userId } = await signedIn(t)
    const asMember = { authorization: `Bearer ${token}` }
    const refused = expectEnvelope(
      await t.call('PATCH', `/users/${userId}`, { json: { role: 'admin' }, headers: asMember }),
      403,
      'FORBIDDEN',
    )
    expect(refused.details[0]?.field).toBe('role')
    expectEnvelope(
      await t.post('/users', { name: 'B', email: 'b@example.com', role: 'admin' }),
      403,
      'FORBIDDEN',
    )
    expect((await t.get(`/users/${userId}`)).body.role).toBe('member')
    // Echoing the role it has is no change: a PUT of the record as read is fine.
    const record = (await t.get(`/users/${userId}`)).body
    const echoed = await t.call('PUT', `/users/${userId}`, {
      json: { name: 'Ada L', email: record.email, role: 'member' },
      headers: asMember,
    })
    expect(echoed.status).toBe(200)
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })

  test('a role change ends the user’s sessions and tokens at once', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { key } = await withAdmin(t)
    await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: key },
    )
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const asAda = { authorization: `Bearer ${login.body.access_token}` }
    expect((await t.get('/me', { headers: asAda })).status).toBe(200)
    const promoted = await t.call('PATCH', '/users/2', { json: { role: 'admin' }, headers: key })
    expect(promoted.body.role).toBe('admin')
    expectEnvelope(await t.get('/me', { headers: asAda }), 401, 'UNAUTHORIZED')
  })

  test('the last admin cannot be demoted or deleted: 409 saying so, and nothing changes', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { key, admin } = await withAdmin(t)
    const demoted = expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { role: 'member' }, headers: key }),
      409,
      'CONFLICT',
    )
    expect(demoted.message).toBe(
      'User 1 is the last active admin; make another user an admin first',
    )
    expectEnvelope(await t.call('DELETE', '/users/1', { headers: admin }), 409, 'CONFLICT')
    expect((await t.get('/users/1', { headers: key })).body.role).toBe('admin')
    expect((await t.get('/me', { headers: admin })).status).toBe(200)
    await t.post('/users', { name: 'Bo', email: 'bo@example.com', role: 'admin' }, { headers: key })
    expect(
      (await t.call('PATCH', '/users/1', { json: { role: 'member' }, headers: key })).body.role,
    ).toBe('member')
  })
})

describe('deactivating a user over HTTP', () => {
  test('a member cannot deactivate or reactivate itself (403 naming active); echoing true is fine', async () => {
    await using t = await makeTestApp()
    const { token, userId } = await signedIn(t)
    const asMember = { authorization: `Bearer ${token}` }
    const refused = expectEnvelope(
      await t.call('PATCH', `/users/${userId}`, { json: { active: false }, headers: asMember }),
      403,
      'FORBIDDEN',
    )
    expect(refused.details[0]?.field).toBe('active')
    const echoed = await t.call('PATCH', `/users/${userId}`, {
      json: { name: 'Ada L', active: true },
      headers: asMember,
    })
    expect(echoed.body).toMatchObject({ name: 'Ada L', active: true })
    expect((await t.get('/me', { headers: asMember })).status).toBe(200)
  })

  test('deactivation ends sessions and tokens, refuses sign-in with 403; reactivation restores it', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = {
      'x-api-key': (await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)).key,
    }
    const ada = await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: key },
    )
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const asAda = { authorization: `Bearer ${login.body.access_token}` }
    const off = await t.call('PATCH', `/users/${ada.body.id}`, {
      json: { active: false },
      headers: key,
    })
    expect(off.body.active).toBe(false)
    expectEnvelope(await t.get('/me', { headers: asAda }), 401, 'UNAUTHORIZED')
    const again = expectEnvelope(
      await t.post('/login', { email: 'ada@example.com', password: PASSWORD }),
      403,
      'FORBIDDEN',
    )
    expect(again.message).toBe('This account is deactivated; an administrator can restore it')
    // A wrong password is the same 401 as for anyone: deactivation is told only to the owner.
    expectEnvelope(
      await t.post('/login', { email: 'ada@example.com', password: 'not the password' }),
      401,
      'INVALID_CREDENTIALS',
    )
    const listed = await t.get('/users', { headers: key })
    expect(listed.body.data.map((user: { active: boolean }) => user.active)).toEqual([false])
    await t.call('PATCH', `/users/${ada.body.id}`, { json: { active: true }, headers: key })
    expect((await t.post('/login', { email: 'ada@example.com', password: PASSWORD })).status).toBe(
      200,
    )
  })

  test('the last active admin cannot be deactivated: 409 naming active, and nothing changes', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = {
      'x-api-key': (await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)).key,
    }
    await t.post(
      '/users',
      { name: 'Root', email: 'root@example.com', password: PASSWORD, role: 'admin' },
      { headers: key },
    )
    const refused = expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { active: false }, headers: key }),
      409,
      'CONFLICT',
    )
    expect(refused.details[0]?.field).toBe('active')
    expect((await t.get('/users/1', { headers: key })).body.active).toBe(true)
    // An inactive admin does not count: the other admin made inactive cannot hold the seat.
    await t.post(
      '/users',
      { name: 'Bo', email: 'bo@example.com', role: 'admin', active: false },
      { headers: key },
    )
    expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { role: 'member' }, headers: key }),
      409,
      'CONFLICT',
    )
    await t.call('PATCH', '/users/2', { json: { active: true }, headers: key })
    expect(
      (await t.call('PATCH', '/users/1', { json: { active: false }, headers: key })).body.active,
    ).toBe(false)
  })
})

describe('docs/sign-in.md’s "Who may do what"', () => {
  test('is the table the routes are built from', async () => {
    const readme = await Bun.file(new URL('../../docs/sign-in.md', import.meta.url)).text()
    const copy = /<!-- access-table:start -->\n([\s\S]*?)\n<!-- access-table:end -->/.exec(readme)
    expect(copy?.[1]).toBe(accessTable())
  })
})
