import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { ManualClock } from '../../../src/timers'
import { dbQuery, expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { apiKey, PASSWORD, signedIn } from '../../helpers/auth'
import { type Knobs, SoftAuthenticator } from '../../helpers/authenticator'

// Passkeys through HTTP (CONTRACT section 15), with a software authenticator that writes what
// a platform authenticator writes. Chromium's virtual authenticator does the same through the
// console in test/browser/passkeys.test.ts.

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** The creation options for a signed-in user (its token). */
const creationOptions = (t: TestApp, token: string) =>
  t.post('/auth/passkeys/register/options', {}, { headers: bearer(token) })

async function registered(t: TestApp, token: string, authenticator: SoftAuthenticator) {
  const options = await creationOptions(t, token)
  expect(options.status).toBe(200)
  const verify = await t.post(
    '/auth/passkeys/register/verify',
    { ...authenticator.register(options.body), name: 'Laptop' },
    { headers: bearer(token) },
  )
  return verify
}

async function signInWith(t: TestApp, authenticator: SoftAuthenticator, knobs = {}) {
  const options = await t.post('/auth/passkeys/login/options', {})
  expect(options.status).toBe(200)
  return t.post('/auth/passkeys/login/verify', await authenticator.assert(options.body, knobs))
}

describe('passkeys', () => {
  test('a signed-in user registers one, lists it, and signs in with it without a username', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    const options = await creationOptions(t, ada.token)
    expect(options.body).toMatchObject({
      rp: { id: 'localhost', name: 'roster' },
      user: { name: 'ada@example.com', displayName: 'Ada' },
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      attestation: 'none',
    })
    expect(options.body.user.id).not.toContain('ada')
    const created = await t.post(
      '/auth/passkeys/register/verify',
      { ...authenticator.register(options.body), name: 'Laptop' },
      { headers: bearer(ada.token) },
    )
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.any(Number),
      name: 'Laptop',
      created_at: expect.any(String),
      last_used_at: null,
      backed_up: false,
      flagged_at: null,
    })
    const list = await t.get('/me/passkeys', { headers: bearer(ada.token) })
    expect(list.body.data).toEqual([created.body])

    const loginOptions = await t.post('/auth/passkeys/login/options', {})
    expect(loginOptions.body).toMatchObject({ rpId: 'localhost', userVerification: 'required' })
    expect(loginOptions.body.allowCredentials ?? []).toEqual([])
    const signIn = await t.post(
      '/auth/passkeys/login/verify',
      await authenticator.assert(loginOptions.body),
    )
    expect(signIn.status).toBe(200)
    expect(signIn.body).toEqual({
      user: expect.objectContaining({ id: ada.userId, email: 'ada@example.com' }),
      access_token: expect.stringMatching(/^rt_/),
      token_type: 'Bearer',
      expires_in: 3600,
    })
    expect(signIn.headers.get('set-cookie')).toMatch(/^session=rs_/)
    const me = await t.get('/me', { headers: bearer(signIn.body.access_token) })
    expect(me.body.id).toBe(ada.userId)
    const events = await dbQuery<{ action: string }>(
      t.deps,
      `SELECT action FROM audit_events WHERE action LIKE 'passkey.%' OR action = 'session.created' ORDER BY seq`,
    )
    expect(events.map((event) => event.action)).toEqual([
      'session.created',
      'passkey.created',
      'session.created',
    ])
  })

  test('a challenge works once: a replayed assertion is refused, and so is a second registration', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    const options = await creationOptions(t, ada.token)
    const response = authenticator.register(options.body)
    expect(
      (await t.post('/auth/passkeys/register/verify', response, { headers: bearer(ada.token) }))
        .status,
    ).toBe(201)
    expectEnvelope(
      await t.post('/auth/passkeys/register/verify', response, { headers: bearer(ada.token) }),
      400,
      'TOKEN_USED',
    )
    const loginOptions = await t.post('/auth/passkeys/login/options', {})
    const assertion = await authenticator.assert(loginOptions.body)
    expect((await t.post('/auth/passkeys/login/verify', assertion)).status).toBe(200)
    expectEnvelope(await t.post('/auth/passkeys/login/verify', assertion), 400, 'TOKEN_USED')
  })

  test('a challenge expires after 5 minutes, and one roster never issued is refused', async () => {
    const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    expect((await registered(t, ada.token, authenticator)).status).toBe(201)
    const options = await t.post('/auth/passkeys/login/options', {})
    clock.advance(5 * 60 * 1000 + 1)
    expectEnvelope(
      await t.post('/auth/passkeys/login/verify', await authenticator.assert(options.body)),
      400,
      'TOKEN_EXPIRED',
    )
    expectEnvelope(
      await t.post(
        '/auth/passkeys/login/verify',
        await authenticator.assert({ challenge: 'bm90LWEtY2hhbGxlbmdl' }),
      ),
      400,
      'TOKEN_INVALID',
    )
  })

  test('user verification off, another origin, another relying party: refused, nothing signed in', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    const refusals: [Knobs, RegExp][] = [
      [{ userVerified: false }, /user.*verif/i],
      [{ origin: 'https://evil.example' }, /not accepted from https:\/\/evil\.example/],
      [{ rpId: 'evil.example' }, /RP ID/i],
    ]
    for (const [knobs, reason] of refusals) {
      const options = await creationOptions(t, ada.token)
      const refused = await t.post(
        '/auth/passkeys/register/verify',
        authenticator.register(options.body, knobs),
        { headers: bearer(ada.token) },
      )
      expectEnvelope(refused, 400, 'BAD_REQUEST')
      expect(refused.body.error.message).toMatch(reason)
    }
    expect((await t.get('/me/passkeys', { headers: bearer(ada.token) })).body.data).toEqual([])
    // Registered properly, then used without user verification.
    expect((await registered(t, ada.token, authenticator)).status).toBe(201)
    const noUv = await signInWith(t, authenticator, { userVerified: false })
    expectEnvelope(noUv, 400, 'BAD_REQUEST')
    expect(noUv.headers.get('set-cookie')).toBeNull()
    expectEnvelope(
      await signInWith(t, authenticator, { origin: 'http://evil.example' }),
      400,
      'BAD_REQUEST',
    )
  })

  test('a signature from another key is 401, and a passkey roster does not know is 401', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const real = await SoftAuthenticator.create()
    expect((await registered(t, ada.token, real)).status).toBe(201)
    const stranger = await SoftAuthenticator.create()
    expectEnvelope(await signInWith(t, stranger), 401, 'INVALID_CREDENTIALS')
    // The stranger claims the registered credential's id, signing with its own key.
    const options = await t.post('/auth/passkeys/login/options', {})
    const forged = await stranger.assert(options.body)
    forged.id = real.id
    forged.rawId = real.id
    expectEnvelope(await t.post('/auth/passkeys/login/verify', forged), 401, 'INVALID_CREDENTIALS')
    // The right key and signature, but the account it names is another's.
    const again = await t.post('/auth/passkeys/login/options', {})
    const elsewhere = await real.assert(again.body)
    elsewhere.response.userHandle = Buffer.from('someone else').toString('base64url')
    const refused = await t.post('/auth/passkeys/login/verify', elsewhere)
    expectEnvelope(refused, 401, 'INVALID_CREDENTIALS')
    expect(refused.body.error.message).toMatch(/another account/)
  })

  test('a counter that goes back flags the passkey as cloned and refuses it from then on', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    expect((await registered(t, ada.token, authenticator)).status).toBe(201)
    authenticator.setCounter(10)
    expect((await signInWith(t, authenticator)).status).toBe(200)
    authenticator.setCounter(4)
    const cloned = await signInWith(t, authenticator)
    expectEnvelope(cloned, 401, 'INVALID_CREDENTIALS')
    expect(cloned.body.error.message).toMatch(/clone/)
    authenticator.setCounter(100)
    expectEnvelope(await signInWith(t, authenticator), 401, 'INVALID_CREDENTIALS')
    const [passkey] = (await t.get('/me/passkeys', { headers: bearer(ada.token) })).body.data
    expect(passkey.flagged_at).toEqual(expect.any(String))
    const flagged = await dbQuery(
      t.deps,
      `SELECT action FROM audit_events WHERE action = 'passkey.flagged'`,
    )
    expect(flagged).toHaveLength(1)
  })

  test('a deleted passkey signs nobody in; deleting needs a recent sign-in or the password', async () => {
    const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    const created = await registered(t, ada.token, authenticator)
    clock.advance(6 * 60 * 1000)
    const path = `/me/passkeys/${created.body.id}`
    const stale = await t.call('DELETE', path, { headers: bearer(ada.token) })
    expectEnvelope(stale, 403, 'REAUTHENTICATION_REQUIRED')
    expectEnvelope(
      await t.call('DELETE', path, {
        headers: bearer(ada.token),
        json: { current_password: 'wrong' },
      }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    const deleted = await t.call('DELETE', path, {
      headers: bearer(ada.token),
      json: { current_password: PASSWORD },
    })
    expect(deleted.status).toBe(204)
    expectEnvelope(
      await t.call('DELETE', path, {
        headers: bearer(ada.token),
        json: { current_password: PASSWORD },
      }),
      404,
      'NOT_FOUND',
    )
    expectEnvelope(await signInWith(t, authenticator), 401, 'INVALID_CREDENTIALS')
  })

  test('a name with a control character is 422, and nothing is registered', async () => {
    await using t = await makeTestApp()
    const ada = await signedIn(t)
    const authenticator = await SoftAuthenticator.create()
    const options = await creationOptions(t, ada.token)
    const refused = await t.post(
      '/auth/passkeys/register/verify',
      { ...authenticator.register(options.body), name: 'Lap\u0000top' },
      { headers: bearer(ada.token) },
    )
    expectEnvelope(refused, 422, 'VALIDATION_ERROR')
    expect((await t.get('/me/passkeys', { headers: bearer(ada.token) })).body.data).toEqual([])
  })

  test('registration needs a signed-in user; a key or nobody is refused', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    expectEnvelope(await t.post('/auth/passkeys/register/options', {}), 401, 'UNAUTHORIZED')
    expectEnvelope(
      await t.post('/auth/passkeys/register/options', {}, { headers: { 'x-api-key': key } }),
      401,
      'UNAUTHORIZED',
    )
    expectEnvelope(await t.get('/me/passkeys'), 401, 'UNAUTHORIZED')
  })

  test('malformed credentials are 400 or 422, never 500', async () => {
    await using t = await makeTestApp()
    const bodies: unknown[] = [
      {},
      { id: 'x', rawId: 'x', type: 'public-key', response: {} },
      { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: '!!!' } },
      {
        id: 'x',
        rawId: 'x',
        type: 'public-key',
        response: { clientDataJSON: Buffer.from('{"challenge":1}').toString('base64url') },
      },
      {
        id: 'x',
        rawId: 'x',
        type: 'public-key',
        response: {
          clientDataJSON: Buffer.from(
            JSON.stringify({
              type: 'webauthn.get',
              challenge: 'abc',
              origin: 'http://localhost:3000',
            }),
          ).toString('base64url'),
        },
      },
      { id: 'x', rawId: 'x', type: 'other', response: { clientDataJSON: 'e30' } },
      // U+0000 and other non-base64url text, which PostgreSQL would refuse as a parameter.
      {
        id: 'a\u0000b',
        rawId: 'a\u0000b',
        type: 'public-key',
        response: { clientDataJSON: 'e30' },
      },
      { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'e30\u0000' } },
      [],
      'text',
    ]
    for (const body of bodies) {
      const reply = await t.post('/auth/passkeys/login/verify', body)
      expect([400, 422]).toContain(reply.status)
      expect(reply.body.error.code).toEqual(expect.any(String))
    }
  })
})

describe('an account with passkeys and no password', () => {
  async function passkeyOnly(t: TestApp) {
    const created = await t.post('/users', { name: 'Bo', email: 'bo@example.com' })
    // Signed in the way such an account first is (a mailed link), then a passkey.
    const issued = await t.deps.credentials.issue(created.body.id, SYSTEM, 'magic_link')
    const authenticator = await SoftAuthenticator.create()
    expect((await registered(t, issued.accessToken, authenticator)).status).toBe(201)
    return { id: created.body.id as number, token: issued.accessToken, authenticator }
  }

  test('can sign in, so nobody else may give it a password (401 in open mode)', async () => {
    await using t = await makeTestApp()
    const bo = await passkeyOnly(t)
    expectEnvelope(
      await t.call('PATCH', `/users/${bo.id}`, { json: { password: PASSWORD } }),
      401,
      'UNAUTHORIZED',
    )
  })

  test('changes its own email or password within 5 minutes of a sign-in, and not after', async () => {
    const clock = new ManualClock(Date.parse('2026-11-27T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const bo = await passkeyOnly(t)
    const signIn = await signInWith(t, bo.authenticator)
    const headers = bearer(signIn.body.access_token)
    const changed = await t.call('PATCH', `/users/${bo.id}`, {
      json: { email: 'bo.new@example.com' },
      headers,
    })
    expect(changed.status).toBe(200)
    const fresh = bearer((await signInWith(t, bo.authenticator)).body.access_token)
    clock.advance(5 * 60 * 1000 + 1)
    expectEnvelope(
      await t.call('PATCH', `/users/${bo.id}`, { json: { password: PASSWORD }, headers: fresh }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
  })
})
