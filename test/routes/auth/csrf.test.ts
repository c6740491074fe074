import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../../helpers/app'
import { form, PASSWORD, signedIn } from '../../helpers/auth'

describe('CSRF', () => {
  test('an unsafe request with the session cookie from another origin is 403, and changes nothing', async () => {
    await using t = await makeTestApp()
    const { cookie, userId } = await signedIn(t)
    const crossSite: Record<string, string>[] = [
      { origin: 'https://evil.test' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
    ]
    for (const headers of crossSite) {
      const reply = await t.call('PATCH', `/users/${userId}`, {
        json: { name: 'pwned' },
        headers: { cookie, ...headers },
      })
      expectEnvelope(reply, 403, 'FORBIDDEN')
      expectEnvelope(
        await t.call('POST', '/logout', { headers: { cookie, ...headers } }),
        403,
        'FORBIDDEN',
      )
    }
    expect((await t.get(`/users/${userId}`)).body.name).toBe('Ada')
    expect((await t.get('/me', { headers: { cookie } })).status).toBe(200)
  })

  test('the same origin, a listed origin, same-origin fetch metadata, or no headers at all pass', async () => {
    await using t = await makeTestApp({ corsOrigins: ['https://app.example.com'] })
    const { cookie, userId } = await signedIn(t)
    const allowed: Record<string, string>[] = [
      { origin: 'http://localhost' },
      { origin: 'https://app.example.com' },
      { 'sec-fetch-site': 'same-origin' },
      { 'sec-fetch-site': 'none' },
      {},
    ]
    for (const headers of allowed) {
      const reply = await t.call('PATCH', `/users/${userId}`, {
        json: { name: 'ok' },
        headers: { cookie, ...headers },
      })
      expect(reply.status).toBe(200)
    }
  })

  test('a cross-site form post to /login is 403 even without a cookie; JSON is left to CORS', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'ada@example.com', password: PASSWORD })
    for (const path of ['/login', '/v1/login', '/v2/login']) {
      const formPost = await t.call('POST', path, {
        ...form({ email: 'ada@example.com', password: PASSWORD }),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'https://evil.test',
        },
      })
      expectEnvelope(formPost, 403, 'FORBIDDEN')
      const textPlain = await t.call('POST', path, {
        body: 'email=ada@example.com',
        headers: { 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site' },
      })
      expectEnvelope(textPlain, 403, 'FORBIDDEN')
    }
    const json = await t.post(
      '/login',
      { email: 'ada@example.com', password: PASSWORD },
      { headers: { origin: 'https://evil.test' } },
    )
    expect(json.status).toBe(200)
  })

  test('--public-url is the service’s own origin', async () => {
    await using t = await makeTestApp({ publicUrl: 'https://roster.example.com' })
    const { cookie, userId } = await signedIn(t)
    const own = await t.call('PATCH', `/users/${userId}`, {
      json: { name: 'x' },
      headers: { cookie, origin: 'https://roster.example.com' },
    })
    expect(own.status).toBe(200)
    const local = await t.call('PATCH', `/users/${userId}`, {
      json: { name: 'x' },
      headers: { cookie, origin: 'http://localhost' },
    })
    expectEnvelope(local, 403, 'FORBIDDEN')
  })

  test('safe methods are never refused', async () => {
    await using t = await makeTestApp()
    const { cookie } = await signedIn(t)
    expect((await t.get('/me', { headers: { cookie, origin: 'https://evil.test' } })).status).toBe(
      200,
    )
  })
})
