import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { ManualClock } from '../../../src/timers'
import { dbQuery, expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { apiKey, basic, form, PASSWORD, signedIn } from '../../helpers/auth'

// TOTP, the second step of /login, recovery codes and the step-up rule (CONTRACT section 15),
// with codes made by an independent client library (otpauth), as an authenticator app would.

setDefaultTimeout(30_000)

const START = Date.parse('2026-11-27T12:00:00Z')
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

function appOf(secret: string) {
  return new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) })
}

/** Ada with TOTP on: her app, her recovery codes, her (fresh) token. */
async function withTotp(t: TestApp, clock: ManualClock) {
  const ada = await signedIn(t)
  const enrolled = await t.post('/auth/totp/enroll', {}, { headers: bearer(ada.token) })
  expect(enrolled.status).toBe(200)
  const app = appOf(enrolled.body.secret)
  const confirmed = await t.post(
    '/auth/totp/confirm',
    { code: app.generate({ timestamp: clock.now() }) },
    { headers: bearer(ada.token) },
  )
  expect(confirmed.status).toBe(200)
  return { ...ada, app, recoveryCodes: confirmed.body.recovery_codes as string[] }
}

const login = (t: TestApp) =>
  t.call('POST', '/login', form({ email: 'ada@example.com', password: PASSWORD }))

describe('TOTP', () => {
  test('enrolment answers a secret and an otpauth URI; a right code turns it on with ten recovery codes', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await signedIn(t)
    const enrolled = await t.post('/auth/totp/enroll', {}, { headers: bearer(ada.token) })
    expect(enrolled.body).toEqual({
      secret: expect.stringMatching(/^[A-Z2-7]{32}$/),
      otpauth_url: expect.stringMatching(/^otpauth:\/\/totp\/roster:ada%40example\.com\?secret=/),
    })
    expect(enrolled.headers.get('cache-control')).toBe('no-store')
    const app = appOf(enrolled.body.secret)
    const wrong = await t.post(
      '/auth/totp/confirm',
      { code: '000000' },
      { headers: bearer(ada.token) },
    )
    expectEnvelope(wrong, 422, 'VALIDATION_ERROR')
    // Not on yet: a password still signs in.
    expect((await login(t)).body.access_token).toEqual(expect.any(String))
    const confirmed = await t.post(
      '/auth/totp/confirm',
      { code: app.generate({ timestamp: clock.now() }) },
      { headers: bearer(ada.token) },
    )
    expect(confirmed.status).toBe(200)
    expect(confirmed.body.recovery_codes).toHaveLength(10)
    expect(new Set(confirmed.body.recovery_codes).size).toBe(10)
    const status = await t.get('/me/factors', { headers: bearer(ada.token) })
    expect(status.body).toEqual({ totp: true, passkeys: [], recovery_codes_left: 10 })
    expectEnvelope(
      await t.post('/auth/totp/enroll', {}, { headers: bearer(ada.token) }),
      409,
      'CONFLICT',
    )
    // Stored hashed: no code appears in the database.
    const rows = await dbQuery<{ code_hash: string }>(
      t.deps,
      'SELECT code_hash FROM recovery_codes',
    )
    expect(rows).toHaveLength(10)
    for (const code of confirmed.body.recovery_codes) {
      expect(JSON.stringify(rows)).not.toContain(code)
    }
  })

  test('with TOTP on, /login answers mfa_required (no cookie, no token) and the code finishes it', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    clock.advance(30_000)
    const first = await login(t)
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ mfa_required: true, mfa_token: expect.stringMatching(/^rmfa_/) })
    expect(first.headers.get('set-cookie')).toBeNull()
    const done = await t.post('/auth/mfa/verify', {
      mfa_token: first.body.mfa_token,
      code: ada.app.generate({ timestamp: clock.now() }),
    })
    expect(done.status).toBe(200)
    expect(done.body).toEqual({
      user: expect.objectContaining({ id: ada.userId }),
      access_token: expect.stringMatching(/^rt_/),
      token_type: 'Bearer',
      expires_in: 3600,
    })
    expect(done.headers.get('set-cookie')).toMatch(/^session=rs_/)
    expectEnvelope(
      await t.post('/auth/mfa/verify', {
        mfa_token: first.body.mfa_token,
        code: ada.app.generate({ timestamp: clock.now() }),
      }),
      400,
      'TOKEN_USED',
    )
  })

  test('a code is accepted once, even with a fresh mfa_token', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    clock.advance(30_000)
    const code = ada.app.generate({ timestamp: clock.now() })
    const first = await login(t)
    expect(
      (await t.post('/auth/mfa/verify', { mfa_token: first.body.mfa_token, code })).status,
    ).toBe(200)
    const second = await login(t)
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token: second.body.mfa_token, code }),
      401,
      'INVALID_CREDENTIALS',
    )
    // The code the confirmation took is spent too.
    clock.advance(30_000)
    const next = ada.app.generate({ timestamp: clock.now() })
    expect(
      (await t.post('/auth/mfa/verify', { mfa_token: second.body.mfa_token, code: next })).status,
    ).toBe(200)
  })

  test('an mfa_token takes 5 wrong codes, then it is spent; it lasts 5 minutes', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    clock.advance(30_000)
    const { mfa_token } = (await login(t)).body
    for (let i = 0; i < 5; i++) {
      expectEnvelope(
        await t.post('/auth/mfa/verify', { mfa_token, code: '000000' }),
        401,
        'INVALID_CREDENTIALS',
      )
    }
    const right = ada.app.generate({ timestamp: clock.now() })
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token, code: right }),
      400,
      'TOKEN_EXPIRED',
    )
    const late = (await login(t)).body.mfa_token
    clock.advance(5 * 60 * 1000 + 1)
    const code = ada.app.generate({ timestamp: clock.now() })
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token: late, code }),
      400,
      'TOKEN_EXPIRED',
    )
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token: 'rmfa_nope', code }),
      400,
      'TOKEN_INVALID',
    )
    const failures = await dbQuery(
      t.deps,
      `SELECT action FROM audit_events WHERE action = 'login.failed'`,
    )
    expect(failures).toHaveLength(5)
  })

  test('guessing codes is limited like guessing passwords: 429 after 10 failures for the account', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    clock.advance(30_000)
    let last = 0
    for (let i = 0; i < 3; i++) {
      const { mfa_token } = (await login(t)).body
      for (let j = 0; j < 4; j++) {
        last = (await t.post('/auth/mfa/verify', { mfa_token, code: '111111' })).status
      }
    }
    expect(last).toBe(429)
    // Even the right password is 429 now, as after 10 wrong passwords, and so is the right code.
    expectEnvelope(await login(t), 429, 'RATE_LIMITED')
    expect(ada.userId).toBeGreaterThan(0)
  })

  test('a recovery code finishes a sign-in once; new codes replace the old ones', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    const [first, second] = ada.recoveryCodes as [string, string]
    const one = (await login(t)).body.mfa_token
    const done = await t.post('/auth/mfa/verify', {
      mfa_token: one,
      recovery_code: first.toUpperCase(),
    })
    expect(done.status).toBe(200)
    const two = (await login(t)).body.mfa_token
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token: two, recovery_code: first }),
      401,
      'INVALID_CREDENTIALS',
    )
    expect(
      (await t.get('/me/factors', { headers: bearer(ada.token) })).body.recovery_codes_left,
    ).toBe(9)
    const fresh = await t.post('/auth/recovery-codes', {}, { headers: bearer(ada.token) })
    expect(fresh.body.recovery_codes).toHaveLength(10)
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token: two, recovery_code: second }),
      401,
      'INVALID_CREDENTIALS',
    )
    expect(
      (
        await t.post('/auth/mfa/verify', {
          mfa_token: two,
          recovery_code: fresh.body.recovery_codes[0],
        })
      ).status,
    ).toBe(200)
  })

  test('exactly one of code and recovery_code', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    await withTotp(t, clock)
    const { mfa_token } = (await login(t)).body
    expectEnvelope(await t.post('/auth/mfa/verify', { mfa_token }), 422, 'VALIDATION_ERROR')
    expectEnvelope(
      await t.post('/auth/mfa/verify', { mfa_token, code: '123456', recovery_code: 'abcde-fghjk' }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(await t.post('/auth/mfa/verify', { code: '123456' }), 422, 'VALIDATION_ERROR')
  })

  test('HTTP Basic is refused for an account with TOTP, and the 401 says why', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    await signedIn(t)
    // Remembered by Basic's cache first: turning TOTP on must end that too.
    const authorization = basic('ada@example.com', PASSWORD)
    expect((await t.get('/secure', { headers: { authorization } })).status).toBe(200)
    const token = (await login(t)).body.access_token
    const enrolled = await t.post('/auth/totp/enroll', {}, { headers: bearer(token) })
    await t.post(
      '/auth/totp/confirm',
      { code: appOf(enrolled.body.secret).generate({ timestamp: clock.now() }) },
      { headers: bearer(token) },
    )
    const refused = await t.get('/secure', { headers: { authorization } })
    expectEnvelope(refused, 401, 'UNAUTHORIZED')
    expect(refused.body.error.message).toMatch(/two-factor/)
    const wrong = await t.get('/secure', {
      headers: { authorization: basic('ada@example.com', 'nope') },
    })
    expect(wrong.body.error.message).not.toMatch(/two-factor/)
  })

  test('changing factors needs a sign-in within 5 minutes or the current password', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({}, clock)
    const ada = await withTotp(t, clock)
    clock.advance(5 * 60 * 1000 + 1)
    for (const [method, path] of [
      ['DELETE', '/auth/totp'],
      ['POST', '/auth/recovery-codes'],
      ['POST', '/auth/passkeys/register/options'],
    ] as const) {
      expectEnvelope(
        await t.call(method, path, { headers: bearer(ada.token) }),
        403,
        'REAUTHENTICATION_REQUIRED',
      )
    }
    expectEnvelope(
      await t.call('DELETE', '/auth/totp', {
        headers: bearer(ada.token),
        json: { current_password: 'wrong' },
      }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    const removed = await t.call('DELETE', '/auth/totp', {
      headers: bearer(ada.token),
      json: { current_password: PASSWORD },
    })
    expect(removed.status).toBe(204)
    expect((await t.get('/me/factors', { headers: bearer(ada.token) })).body).toEqual({
      totp: false,
      passkeys: [],
      recovery_codes_left: 0,
    })
    expect((await login(t)).body.access_token).toEqual(expect.any(String))
  })

  test('an admin sees and resets a user’s factors; a member sees only its own', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({ usersAccess: 'protected' }, clock)
    const key = await apiKey(t)
    const created = await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: { 'x-api-key': key } },
    )
    const token = (await login(t)).body.access_token
    const enrolled = await t.post('/auth/totp/enroll', {}, { headers: bearer(token) })
    await t.post(
      '/auth/totp/confirm',
      { code: appOf(enrolled.body.secret).generate({ timestamp: clock.now() }) },
      { headers: bearer(token) },
    )
    const other = await t.post(
      '/users',
      { name: 'Bob', email: 'bob@example.com', password: PASSWORD },
      { headers: { 'x-api-key': key } },
    )
    const path = `/users/${created.body.id}/factors`
    expect((await t.get(path, { headers: bearer(token) })).body.totp).toBe(true)
    const bob = (
      await t.call('POST', '/login', form({ email: 'bob@example.com', password: PASSWORD }))
    ).body
    expectEnvelope(await t.get(path, { headers: bearer(bob.access_token) }), 403, 'FORBIDDEN')
    expectEnvelope(await t.call('DELETE', path, { headers: bearer(token) }), 403, 'FORBIDDEN')
    expect((await t.call('DELETE', path, { headers: { 'x-api-key': key } })).status).toBe(204)
    expect((await t.get(path, { headers: { 'x-api-key': key } })).body.totp).toBe(false)
    expectEnvelope(
      await t.call('DELETE', `/users/9999/factors`, { headers: { 'x-api-key': key } }),
      404,
      'NOT_FOUND',
    )
    expect((await login(t)).body.access_token).toEqual(expect.any(String))
    const reset = await dbQuery(
      t.deps,
      `SELECT actor_type FROM audit_events WHERE action = 'factors.removed'`,
    )
    expect(reset).toEqual([{ actor_type: 'api_key' }])
    expect(other.status).toBe(201)
  })
})
