import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { passwordWorkload } from '../../src/auth/passwords'
import { dbQuery, expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { apiKey, basic, form, PASSWORD, signedIn } from '../helpers/auth'

// Many sign-ins here each run argon2id (tens of ms).
setDefaultTimeout(30_000)

const HOUR = 3600_000

async function clockedApp() {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') }
  const t = await makeTestApp({}, () => new Date(clock.now))
  return Object.assign(t, { clock })
}

async function expect401(
  t: TestApp,
  path: string,
  headers: Record<string, string>,
  challenge: string,
) {
  const reply = await t.get(path, { headers })
  expectEnvelope(reply, 401, 'UNAUTHORIZED')
  expect(reply.headers.get('www-authenticate')).toStartWith(challenge)
  return reply
}

describe('Bearer on /me', () => {
  test('valid: the caller’s record; also under /v1 and /v2', async () => {
    await using t = await makeTestApp()
    const { token } = await signedIn(t)
    for (const prefix of ['', '/v1', '/v2']) {
      const reply = await t.get(`${prefix}/me`, { headers: { authorization: `Bearer ${token}` } })
      expect(reply.status).toBe(200)
      expect(reply.body.email).toBe('ada@example.com')
    }
    // The scheme name is case-insensitive (RFC 7235).
    expect((await t.get('/me', { headers: { authorization: `bearer ${token}` } })).status).toBe(200)
  })

  test.each([
    ['missing', {}],
    ['malformed', { authorization: 'Bearer' }],
    ['malformed (two tokens)', { authorization: 'Bearer a b' }],
    ['wrong', { authorization: `Bearer rt_${'x'.repeat(43)}` }],
    ['not ours', { authorization: 'Bearer hello' }],
    ['another scheme', { authorization: basic('ada@example.com', PASSWORD) }],
    ['an API key instead', { 'x-api-key': `rk_${'x'.repeat(43)}` }],
  ])('%s: 401 with WWW-Authenticate: Bearer', async (_label, headers) => {
    await using t = await makeTestApp()
    await signedIn(t)
    await expect401(t, '/me', headers as Record<string, string>, 'Bearer')
  })

  test('expired after one hour; revoked at logout', async () => {
    await using t = await clockedApp()
    const first = await signedIn(t)
    const auth = { authorization: `Bearer ${first.token}` }
    t.clock.now += HOUR - 1000
    expect((await t.get('/me', { headers: auth })).status).toBe(200)
    t.clock.now += 1000
    const expired = await expect401(t, '/me', auth, 'Bearer')
    expect(expired.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"')

    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    const fresh = { authorization: `Bearer ${login.body.access_token}` }
    expect((await t.call('POST', '/logout', { headers: fresh })).status).toBe(204)
    await expect401(t, '/me', fresh, 'Bearer')
    expectEnvelope(await t.call('POST', '/logout', { headers: fresh }), 401, 'UNAUTHORIZED')
  })
})

describe('the session cookie on /me', () => {
  test('valid; tampered; expired after 7 days; renewed on use', async () => {
    await using t = await clockedApp()
    const { cookie } = await signedIn(t)
    expect((await t.get('/me', { headers: { cookie } })).status).toBe(200)
    const tampered = `${cookie.slice(0, -1)}${cookie.endsWith('A') ? 'B' : 'A'}`
    await expect401(t, '/me', { cookie: tampered }, 'Bearer')
    await expect401(t, '/me', { cookie: 'session=%7B%22uid%22%3A1%7D' }, 'Bearer')
    await expect401(t, '/me', { cookie: 'session=' }, 'Bearer')

    // Used within the first hour: no new cookie. After it: extended by 7 days, cookie sent again.
    t.clock.now += 30 * 60_000
    expect((await t.get('/me', { headers: { cookie } })).headers.get('set-cookie')).toBeNull()
    t.clock.now += 2 * HOUR
    const renewed = await t.get('/me', { headers: { cookie } })
    expect(renewed.headers.get('set-cookie')).toMatch(
      /^session=rs_.*; Max-Age=604800; Path=\/; HttpOnly; SameSite=Lax$/,
    )
    t.clock.now += 7 * 24 * HOUR - 1000
    expect((await t.get('/me', { headers: { cookie } })).status).toBe(200)
    t.clock.now += 7 * 24 * HOUR
    await expect401(t, '/me', { cookie }, 'Bearer')
  })

  test('logout revokes exactly what was presented, and clears the cookie', async () => {
    await using t = await makeTestApp()
    const { token, cookie } = await signedIn(t)
    const out = await t.call('POST', '/logout', { headers: { cookie, origin: 'http://localhost' } })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toBe(
      'session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax',
    )
    await expect401(t, '/me', { cookie }, 'Bearer')
    // The bearer token of the same sign-in was not presented, so it still works.
    expect((await t.get('/me', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
  })
})

describe('a password change', () => {
  test('revokes every session and token of that user (and not of others)', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const bob = await signedIn(t, 'bob@example.com')
    const patch = await t.call('PATCH', `/users/${ada.userId}`, {
      json: { password: 'a brand new password', current_password: PASSWORD },
      headers: { authorization: `Bearer ${ada.token}` },
    })
    expect(patch.status).toBe(200)
    await expect401(t, '/me', { authorization: `Bearer ${ada.token}` }, 'Bearer')
    await expect401(t, '/me', { cookie: ada.cookie }, 'Bearer')
    expect((await t.get('/me', { headers: { authorization: `Bearer ${bob.token}` } })).status).toBe(
      200,
    )
  })

  test('a name change does not', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    await t.call('PATCH', `/users/${ada.userId}`, { json: { name: 'Countess' } })
    expect(
      (await t.get('/me', { headers: { authorization: `Bearer ${ada.token}` } })).body.name,
    ).toBe('Countess')
  })
})

describe('Basic on /secure', () => {
  test('valid: authenticated with the user; argon2 runs once, then the verified credential is cached', async () => {
    await using t = await makeTestApp()
    await signedIn(t)
    const header = { authorization: basic('ada@example.com', PASSWORD) }
    const first = await t.get('/secure', { headers: header })
    expect(first.status).toBe(200)
    expect(first.body).toEqual({
      authenticated: true,
      user: expect.objectContaining({ id: 1, email: 'ada@example.com' }),
    })
    const before = passwordWorkload().verifications
    for (let i = 0; i < 20; i++)
      expect((await t.get('/v2/secure', { headers: header })).status).toBe(200)
    expect(passwordWorkload().verifications).toBe(before)
  })

  test('a cached sign-in answers with the record as it is now, the same as GET /users/{id}', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    const header = { authorization: basic('ada@example.com', PASSWORD) }
    expect((await t.get('/secure', { headers: header })).status).toBe(200)
    await t.post('/groups', { name: 'Pilots' })
    await t.call('PUT', `/groups/1/members/${userId}`)
    await t.call('PATCH', `/users/${userId}`, { json: { name: 'Countess' } })
    const cached = await t.get('/secure', { headers: header })
    expect(cached.body.user).toEqual((await t.get(`/users/${userId}`)).body)
    expect(cached.body.user).toMatchObject({ name: 'Countess', groups: [1] })
  })

  test('the cache is dropped when the password changes', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    const old = { authorization: basic('ada@example.com', PASSWORD) }
    expect((await t.get('/secure', { headers: old })).status).toBe(200)
    await t.call('PATCH', `/users/${userId}`, {
      json: { password: 'the new password', current_password: PASSWORD },
      headers: old,
    })
    await expect401(t, '/secure', old, 'Basic realm="roster", charset="UTF-8"')
    expect(
      (
        await t.get('/secure', {
          headers: { authorization: basic('ada@example.com', 'the new password') },
        })
      ).status,
    ).toBe(200)
  })

  test('unicode passwords and passwords with colons work (split at the first colon)', async () => {
    await using t = await makeTestApp()
    for (const [email, password] of [
      ['u1@example.com', 'pässwörd-日本語-🔑'],
      ['u2@example.com', 'with:colons:inside'],
    ] as const) {
      await t.post('/users', { name: 'U', email, password })
      expect(
        (await t.get('/secure', { headers: { authorization: basic(email, password) } })).status,
      ).toBe(200)
    }
  })

  test.each([
    ['missing', {}],
    ['no colon', { authorization: `Basic ${Buffer.from('ada@example.com').toString('base64')}` }],
    ['not base64', { authorization: 'Basic !!!not-base64!!!' }],
    ['bad padding', { authorization: 'Basic YWJj=' }],
    ['empty user', { authorization: basic('', PASSWORD) }],
    [
      'not UTF-8',
      { authorization: `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x61]).toString('base64')}` },
    ],
    ['wrong password', { authorization: basic('ada@example.com', 'wrong password') }],
    ['unknown user', { authorization: basic('nobody@example.com', PASSWORD) }],
    ['a bearer token instead', { authorization: 'Bearer abc' }],
  ])('%s: 401 with the Basic challenge', async (_label, headers) => {
    await using t = await makeTestApp()
    await signedIn(t)
    const reply = await expect401(t, '/secure', headers as Record<string, string>, 'Basic')
    expect(reply.headers.get('www-authenticate')).toBe('Basic realm="roster", charset="UTF-8"')
    expect(reply.text).not.toContain(PASSWORD)
  })

  test('wrong Basic passwords count towards the limiter like failed logins', async () => {
    await using t = await makeTestApp()
    await signedIn(t)
    for (let i = 0; i < 10; i++)
      await t.get('/secure', { headers: { authorization: basic('ada@example.com', `nope ${i}`) } })
    const limited = await t.get('/secure', {
      headers: { authorization: basic('ada@example.com', PASSWORD) },
    })
    expectEnvelope(limited, 429, 'RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})

describe('API key on /data', () => {
  test('valid in the header or the query: counts and the key; last_used_at recorded', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'A', email: 'a@example.com' })
    const key = await apiKey(t, 'reporting')
    const viaHeader = await t.get('/data', { headers: { 'x-api-key': key } })
    expect(viaHeader.status).toBe(200)
    expect(viaHeader.body).toEqual({
      data: { users: 1, uploads: 0, webhook_events: 0 },
      key: { id: 1, name: 'reporting' },
    })
    expect((await t.get(`/v2/data?api_key=${key}`)).status).toBe(200)
    expect((await t.get('/data', { headers: { 'x-api-key': key }, json: undefined })).status).toBe(
      200,
    )
    const [row] = await dbQuery<{ last_used_at: string | null }>(
      t.deps,
      'SELECT last_used_at FROM api_keys',
    )
    expect(row?.last_used_at).toEqual(expect.any(String))
  })

  test('both ways at once: fine when equal, 400 when different', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    expect((await t.get(`/data?api_key=${key}`, { headers: { 'x-api-key': key } })).status).toBe(
      200,
    )
    expectEnvelope(
      await t.get(`/data?api_key=${await apiKey(t, 'other')}`, { headers: { 'x-api-key': key } }),
      400,
      'BAD_REQUEST',
    )
    expectEnvelope(await t.get(`/data?api_key=${key}&api_key=x`), 400, 'BAD_REQUEST')
  })

  test.each([
    ['missing', {}],
    ['malformed', { 'x-api-key': 'not a key' }],
    ['wrong', { 'x-api-key': `rk_${'y'.repeat(43)}` }],
    ['a bearer token instead', { authorization: 'Bearer rt_x' }],
  ])('%s: 401 with WWW-Authenticate: ApiKey', async (_label, headers) => {
    await using t = await makeTestApp()
    await apiKey(t)
    await expect401(t, '/data', headers as Record<string, string>, 'ApiKey')
  })

  test('a revoked key is refused at once', async () => {
    await using t = await makeTestApp()
    const admin = await apiKey(t, 'admin')
    const doomed = await t.deps.apiKeys.create({ name: 'doomed', scopes: ['*'] }, SYSTEM)
    expect((await t.get('/data', { headers: { 'x-api-key': doomed.key } })).status).toBe(200)
    expect(
      (await t.call('DELETE', `/api-keys/${doomed.id}`, { headers: { 'x-api-key': admin } })).body,
    ).toEqual({
      id: doomed.id,
      revoked: true,
    })
    await expect401(t, '/data', { 'x-api-key': doomed.key }, 'ApiKey')
  })
})

describe('housekeeping', () => {
  test('purgeExpired deletes expired sessions and tokens, and keeps live ones', async () => {
    const { purgeExpired } = await import('../../src/deps')
    await using t = await clockedApp()
    await signedIn(t)
    const count = async (table: string) =>
      (
        await dbQuery<{ n: number }>(t.deps, `SELECT CAST(count(*) AS INTEGER) AS n FROM ${table}`)
      )[0]?.n
    t.clock.now += 2 * HOUR
    await purgeExpired(t.deps)
    expect([await count('sessions'), await count('access_tokens')]).toEqual([1, 0])
    t.clock.now += 8 * 24 * HOUR
    await purgeExpired(t.deps)
    expect([await count('sessions'), await count('access_tokens')]).toEqual([0, 0])
  })
})
