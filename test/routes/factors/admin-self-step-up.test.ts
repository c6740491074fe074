import { describe, expect, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { SYSTEM } from '../../../src/audit/events'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'

// The step-up of section 15 (a sign-in within 5 minutes, or current_password) for an admin's
// own factors: the admin route DELETE /users/{id}/factors must not be a second door around it.
// PATCH /users/{id} already treats an admin on its own account as the account itself.

const START = Date.parse('2026-11-29T08:00:00Z')
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** An admin with TOTP on, signed in; a second admin so that neither is the last. */
async function adminWithTotp(t: TestApp, clock: ManualClock) {
  const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
  const made = await t.post(
    '/users',
    { name: 'Root', email: 'root@example.com', password: PASSWORD, role: 'admin' },
    { headers: { 'x-api-key': key } },
  )
  await t.post(
    '/users',
    { name: 'Second', email: 'second@example.com', password: PASSWORD, role: 'admin' },
    { headers: { 'x-api-key': key } },
  )
  const login = await t.post('/login', { email: 'root@example.com', password: PASSWORD })
  const token = login.body.access_token as string
  const enrolled = await t.post('/auth/totp/enroll', {}, { headers: bearer(token) })
  const app = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(enrolled.body.secret) })
  const confirmed = await t.post(
    '/auth/totp/confirm',
    { code: app.generate({ timestamp: clock.now() }) },
    { headers: bearer(token) },
  )
  expect(confirmed.status).toBe(200)
  return { id: made.body.id as number, token }
}

describe('an admin’s own factors take the step-up by every route', () => {
  test('a stale admin token that may not turn its TOTP off cannot reset its own factors instead', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({ usersAccess: 'protected' }, clock)
    const root = await adminWithTotp(t, clock)
    clock.advance(5 * 60 * 1000 + 1)
    expectEnvelope(
      await t.call('DELETE', '/auth/totp', { headers: bearer(root.token) }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    // The same stale token, through the route an admin uses for a user who lost its factors.
    expectEnvelope(
      await t.call('DELETE', `/users/${root.id}/factors`, { headers: bearer(root.token) }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect((await t.get('/me/factors', { headers: bearer(root.token) })).body.totp).toBe(true)
  })
})
