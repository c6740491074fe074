import { describe, expect, test } from 'bun:test'
import { makeTestApp } from '../helpers/app'
import { apiKey, basic, form, PASSWORD, signedIn } from '../helpers/auth'

describe('Cache-Control: no-store on every answer with a credential or a caller’s data', () => {
  test('/login, /me, /secure, /api-keys, /data, /uploads, /webhooks/events, the console', async () => {
    await using t = await makeTestApp()
    const { token, cookie } = await signedIn(t)
    const key = { 'x-api-key': await apiKey(t) }
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    const answers = [
      login,
      await t.get('/me', { headers: { authorization: `Bearer ${token}` } }),
      await t.get('/me', { headers: { cookie } }),
      await t.get('/secure', { headers: { authorization: basic('ada@example.com', PASSWORD) } }),
      await t.get('/api-keys', { headers: key }),
      await t.get('/data', { headers: key }),
      await t.get(`/data?api_key=${key['x-api-key']}`),
      await t.get('/uploads', { headers: key }),
      await t.get('/webhooks/events', { headers: key }),
      await t.get('/console'),
    ]
    for (const answer of answers) expect(answer.headers.get('cache-control')).toBe('no-store')
  })

  test('protected reads, and refusals of a presented credential, are no-store too', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = { 'x-api-key': await apiKey(t) }
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' }, { headers: key })
    for (const path of ['/users', '/users/1', '/v2/users?q=ada']) {
      expect((await t.get(path, { headers: key })).headers.get('cache-control')).toBe('no-store')
    }
    const refused = await t.get('/users', { headers: { 'x-api-key': 'rk_wrong' } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('cache-control')).toBe('no-store')
  })
})
