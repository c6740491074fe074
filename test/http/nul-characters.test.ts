import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../helpers/app'
import { apiKey, basic, PASSWORD } from '../helpers/auth'
import { ALL_SECRETS, event, STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

// U+0000 is a valid JSON and URL character that PostgreSQL's text cannot hold (SQLite's can).
// Both backends answer the same: as for any value that matches nothing, or a refused one.
describe('U+0000 and other control characters in what the client sends', () => {
  test('a query parameter with one is 422; a sign-in with one finds nobody (401, not a 500)', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'ada@example.com', password: PASSWORD })
    // A query parameter never holds one (SQLite's LIKE would stop at U+0000 and match all).
    for (const path of [
      '/v2/users?q=%00',
      '/v2/users?q=a%01',
      '/v2/users?email=a%00@example.com',
    ]) {
      const refused = expectEnvelope(await t.get(path), 422, 'VALIDATION_ERROR')
      expect(refused.details[0]?.message).toBe('must not contain control characters')
    }
    const login = await t.post('/login', { email: 'ada\u0000@example.com', password: PASSWORD })
    expectEnvelope(login, 401, 'INVALID_CREDENTIALS')
    const me = await t.get('/me', {
      headers: { authorization: basic('ada\u0000@example.com', PASSWORD) },
    })
    expectEnvelope(me, 401, 'UNAUTHORIZED')
    // The failed sign-in is in the audit log, the address as typed, the character written out.
    const failed = await t.get('/audit?action=login.failed', {
      headers: { 'x-api-key': await apiKey(t) },
    })
    expect(failed.body.data.map((event: { target: object }) => event.target)).toEqual([
      { type: 'login', id: 'ada\\u0000@example.com' },
    ])
  })

  test('a webhook event id or type with a control character is refused (422); retrying one is 404', async () => {
    await using t = await makeTestApp({ webhookSecrets: ALL_SECRETS })
    for (const body of [
      event('customer.created', { email: 'x@example.com' }, 'evt_\u0000'),
      event('customer.\u0000created', { email: 'x@example.com' }),
    ]) {
      const reply = await t.call('POST', '/webhooks', {
        body,
        headers: {
          'content-type': 'application/json',
          ...(await stripeHeaders(body, STRIPE_SECRET)),
        },
      })
      expectEnvelope(reply, 422, 'VALIDATION_ERROR')
    }
    const key = await apiKey(t)
    const retry = await t.call('POST', '/webhooks/events/%00/retry', {
      headers: { 'x-api-key': key },
    })
    expectEnvelope(retry, 404, 'NOT_FOUND')
    const listed = await t.get('/webhooks/events', { headers: { 'x-api-key': key } })
    expect(listed.body.data).toEqual([])
  })
})
