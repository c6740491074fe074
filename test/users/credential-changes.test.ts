import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { AppError } from '../../src/errors/errors'
import { ManualClock } from '../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { apiKey, basic, form, PASSWORD, signedIn } from '../helpers/auth'

const NEW_PASSWORD = 'a brand new passphrase'

/** Whether the account signs in with this email and password. */
async function signsIn(t: TestApp, email: string, password: string): Promise<boolean> {
  return (await t.call('POST', '/login', form({ email, password }))).status === 200
}

describe('changing the password or email of an account that can sign in (section 11)', () => {
  test('anonymous: 401 for the password and the email, and nothing changes', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    for (const json of [
      { password: NEW_PASSWORD },
      { email: 'mallory@example.com' },
      { email: 'mallory@example.com', password: NEW_PASSWORD, current_password: 'guess' },
    ]) {
      const reply = await t.call('PATCH', `/users/${userId}`, { json })
      expectEnvelope(reply, 401, 'UNAUTHORIZED')
      expect(reply.headers.get('www-authenticate')).toContain('Basic realm="roster"')
    }
    const put = await t.call('PUT', `/users/${userId}`, {
      json: { name: 'Ada', email: 'ada@example.com', password: NEW_PASSWORD },
    })
    expectEnvelope(put, 401, 'UNAUTHORIZED')
    expect(await signsIn(t, 'ada@example.com', PASSWORD)).toBe(true)
    expect(await signsIn(t, 'ada@example.com', NEW_PASSWORD)).toBe(false)
    expect((await t.get(`/users/${userId}`)).body.email).toBe('ada@example.com')
  })

  test('anonymous: the name still changes in open mode, and a PUT that repeats the email is no email change', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    expect((await t.call('PATCH', `/users/${userId}`, { json: { name: 'Ada L.' } })).status).toBe(
      200,
    )
    const put = await t.call('PUT', `/users/${userId}`, {
      json: { name: 'Ada Lovelace', email: 'ada@example.com' },
    })
    expect({ status: put.status, name: put.body.name }).toEqual({
      status: 200,
      name: 'Ada Lovelace',
    })
  })

  test('anonymous: an account without a password (it cannot sign in) may get one', async () => {
    await using t = await makeTestApp()
    const created = await t.post('/users', { name: 'Bo', email: 'bo@example.com' })
    const reply = await t.call('PATCH', `/users/${created.body.id}`, {
      json: { password: PASSWORD },
    })
    expect(reply.status).toBe(200)
    expect(await signsIn(t, 'bo@example.com', PASSWORD)).toBe(true)
    // From then on it can sign in: the next anonymous change is refused.
    const again = await t.call('PATCH', `/users/${created.body.id}`, {
      json: { password: NEW_PASSWORD },
    })
    expectEnvelope(again, 401, 'UNAUTHORIZED')
  })

  test('the account’s own token without current_password: 403 REAUTHENTICATION_REQUIRED', async () => {
    await using t = await makeTestApp()
    const { userId, token } = await signedIn(t)
    const headers = { authorization: `Bearer ${token}` }
    const error = expectEnvelope(
      await t.call('PATCH', `/users/${userId}`, { json: { password: NEW_PASSWORD }, headers }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect(error.details).toEqual([
      {
        field: 'current_password',
        message: 'is required, with the account’s own credential, to change its password or email',
        received: '',
      },
    ])
    expectEnvelope(
      await t.call('PATCH', `/users/${userId}`, {
        json: { email: 'new@example.com' },
        headers,
      }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect(await signsIn(t, 'ada@example.com', PASSWORD)).toBe(true)
  })

  test('a wrong current_password is 403 too, never echoed, and counts as a failed sign-in', async () => {
    await using t = await makeTestApp()
    const { userId, token } = await signedIn(t)
    const headers = { authorization: `Bearer ${token}` }
    const wrong = await t.call('PATCH', `/users/${userId}`, {
      json: { password: NEW_PASSWORD, current_password: 'not my password' },
      headers,
    })
    const error = expectEnvelope(wrong, 403, 'REAUTHENTICATION_REQUIRED')
    expect(error.details[0]).toMatchObject({ field: 'current_password', received: '[redacted]' })
    expect(wrong.text).not.toContain('not my password')
    // Nine more wrong guesses fill the address's budget of ten: then even the right one waits.
    for (let i = 0; i < 9; i++) {
      await t.call('PATCH', `/users/${userId}`, {
        json: { password: NEW_PASSWORD, current_password: `guess ${i}` },
        headers,
      })
    }
    const limited = await t.call('PATCH', `/users/${userId}`, {
      json: { password: NEW_PASSWORD, current_password: PASSWORD },
      headers,
    })
    expectEnvelope(limited, 429, 'RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('the account’s own credential with current_password changes it, and ends its sessions', async () => {
    await using t = await makeTestApp()
    const { userId, token, cookie } = await signedIn(t)
    const reply = await t.call('PATCH', `/users/${userId}`, {
      json: { password: NEW_PASSWORD, current_password: PASSWORD },
      headers: { authorization: `Bearer ${token}` },
    })
    expect(reply.status).toBe(200)
    expect(await signsIn(t, 'ada@example.com', NEW_PASSWORD)).toBe(true)
    expectEnvelope(
      await t.get('/me', { headers: { authorization: `Bearer ${token}` } }),
      401,
      'UNAUTHORIZED',
    )
    expectEnvelope(await t.get('/me', { headers: { cookie } }), 401, 'UNAUTHORIZED')
    const email = await t.call('PATCH', `/users/${userId}`, {
      json: { email: 'ada.l@example.com', current_password: NEW_PASSWORD },
      headers: { authorization: basic('ada@example.com', NEW_PASSWORD) },
    })
    expect({ status: email.status, email: email.body.email }).toEqual({
      status: 200,
      email: 'ada.l@example.com',
    })
  })

  test('another user’s credential is 403 FORBIDDEN; an API key may change both', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const bob = await signedIn(t, 'bob@example.com')
    const asBob = await t.call('PATCH', `/users/${ada.userId}`, {
      json: { password: NEW_PASSWORD, current_password: PASSWORD },
      headers: { authorization: `Bearer ${bob.token}` },
    })
    expectEnvelope(asBob, 403, 'FORBIDDEN')
    const key = await apiKey(t)
    const asKey = await t.call('PATCH', `/users/${ada.userId}`, {
      json: { email: 'ada2@example.com', password: NEW_PASSWORD },
      headers: { 'x-api-key': key },
    })
    expect(asKey.status).toBe(200)
    expect(await signsIn(t, 'ada2@example.com', NEW_PASSWORD)).toBe(true)
  })

  test('PATCH with only current_password is a VALIDATION_ERROR naming the body', async () => {
    await using t = await makeTestApp()
    const { userId, token } = await signedIn(t)
    const error = expectEnvelope(
      await t.call('PATCH', `/users/${userId}`, {
        json: { current_password: PASSWORD },
        headers: { authorization: `Bearer ${token}` },
      }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details.map((detail) => detail.field)).toEqual(['body'])
    expect(JSON.stringify(error.details)).not.toContain(PASSWORD)
  })

  test('protected mode: the account itself still needs current_password', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = await apiKey(t)
    await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: { 'x-api-key': key } },
    )
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    const headers = { authorization: `Bearer ${login.body.access_token}` }
    expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { password: NEW_PASSWORD }, headers }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect((await t.call('PATCH', '/users/1', { json: { name: 'A' }, headers })).status).toBe(200)
  })

  test('an account signed in by a mailed link (no password, no passkey) needs a sign-in within 5 minutes to move its own address', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using t = await makeTestApp({ usersAccess: 'protected' }, clock)
    const bo = await t.deps.users.create(
      { name: 'Bo', email: 'bo@example.com', passwordHash: null },
      SYSTEM,
    )
    const issued = await t.deps.credentials.issue(bo.id, SYSTEM, 'magic_link')
    const headers = { authorization: `Bearer ${issued.accessToken}` }
    clock.advance(5 * 60 * 1000 + 1)
    // A stolen token would move the account to the thief's address, and its links with it.
    expectEnvelope(
      await t.call('PATCH', `/users/${bo.id}`, {
        json: { email: 'mallory@evil.example' },
        headers,
      }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect(
      (await t.call('PATCH', `/users/${bo.id}`, { json: { name: 'Bo B.' }, headers })).status,
    ).toBe(200)
    const fresh = await t.deps.credentials.issue(bo.id, SYSTEM, 'magic_link')
    const moved = await t.call('PATCH', `/users/${bo.id}`, {
      json: { email: 'bo@new.example' },
      headers: { authorization: `Bearer ${fresh.accessToken}` },
    })
    expect({ status: moved.status, email: moved.body.email }).toEqual({
      status: 200,
      email: 'bo@new.example',
    })
  })

  test('the write itself refuses when the account gained a password after the check', async () => {
    await using t = await makeTestApp()
    const created = await t.post('/users', { name: 'Bo', email: 'bo@example.com' })
    await t.call('PATCH', `/users/${created.body.id}`, { json: { password: PASSWORD } })
    const refusal = new AppError('UNAUTHORIZED', 'taken meanwhile')
    await expect(
      t.deps.users.update(
        created.body.id,
        { email: 'mallory@example.com' },
        { versions: null, refuseIfCanSignIn: refusal },
        SYSTEM,
      ),
    ).rejects.toBe(refusal)
    expect((await t.get(`/users/${created.body.id}`)).body.email).toBe('bo@example.com')
  })
})

describe('the Basic cache forgets an account at once', () => {
  test('after an email change the old address is refused on the next request', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    const headers = { authorization: basic('ada@example.com', PASSWORD) }
    expect((await t.get('/secure', { headers })).status).toBe(200)
    const key = await apiKey(t)
    await t.call('PATCH', `/users/${userId}`, {
      json: { email: 'ada.new@example.com' },
      headers: { 'x-api-key': key },
    })
    expectEnvelope(await t.get('/secure', { headers }), 401, 'UNAUTHORIZED')
    const fresh = { authorization: basic('ada.new@example.com', PASSWORD) }
    expect((await t.get('/secure', { headers: fresh })).status).toBe(200)
  })

  test('after a deletion the credential is refused on the next request', async () => {
    await using t = await makeTestApp()
    const { userId } = await signedIn(t)
    const headers = { authorization: basic('ada@example.com', PASSWORD) }
    expect((await t.get('/secure', { headers })).status).toBe(200)
    await t.call('DELETE', `/users/${userId}`)
    expectEnvelope(await t.get('/secure', { headers }), 401, 'UNAUTHORIZED')
  })
})
