import { describe, expect, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { SYSTEM } from '../../../src/audit/events'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { apiKey, form, PASSWORD, signedIn } from '../../helpers/auth'
import { startSmtpServer } from '../../helpers/smtp'

const PUBLIC_URL = 'https://roster.example'
const NEW_PASSWORD = 'a brand new passphrase'

async function withMail(clock?: ManualClock) {
  const smtp = await startSmtpServer()
  const t = await makeTestApp(
    {
      smtpUrl: smtp.url,
      publicUrl: PUBLIC_URL,
      mailFrom: 'Roster <no-reply@roster.example>',
    },
    clock,
  )
  const disposeApp = t[Symbol.asyncDispose]
  return Object.assign(t, {
    smtp,
    async [Symbol.asyncDispose]() {
      await disposeApp()
      await smtp[Symbol.asyncDispose]()
    },
  })
}

/** The token of the link in a message, as a user's browser would read it from the address. */
const tokenOf = (link: string | null) => new URL(link as string).searchParams.get('token') as string

const outboxOf = async (t: TestApp, status?: string) =>
  (await t.deps.mail.outbox.list({ limit: 100, offset: 0 }, status as never)).data

describe('POST /auth/password-reset/request and /confirm', () => {
  test('a reset link arrives by SMTP; following it sets the password, ends every session and signs in with the new one', async () => {
    await using t = await withMail()
    const { token, userId } = await signedIn(t)
    const asked = await t.post('/auth/password-reset/request', { email: 'ADA@example.com' })
    expect(asked.status).toBe(202)
    expect(asked.body).toEqual({
      message: 'If the address belongs to an account, a message is on its way.',
    })
    const [mail] = await t.smtp.waitFor(1)
    expect(mail).toMatchObject({
      to: 'ada@example.com',
      from: 'no-reply@roster.example',
      subject: 'Reset your password',
      messageId: expect.stringMatching(/^<[0-9a-f-]{36}@roster\.example>$/),
    })
    expect(mail?.link).toStartWith(`${PUBLIC_URL}/auth/password-reset?token=rat_`)
    expect(mail?.html).toContain(`href="${mail?.link}"`)

    // The link opens a page that changes nothing until its button is pressed.
    const page = await t.get(
      new URL(mail?.link as string).pathname + new URL(mail?.link as string).search,
    )
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")

    const confirmed = await t.post('/auth/password-reset/confirm', {
      token: tokenOf(mail?.link ?? null),
      password: NEW_PASSWORD,
    })
    expect(confirmed.status).toBe(200)
    expect(confirmed.body).toMatchObject({ id: userId, email_verified_at: expect.any(String) })
    expect((await t.get('/me', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)
    const old = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    expectEnvelope(old, 401, 'INVALID_CREDENTIALS')
    const fresh = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: NEW_PASSWORD }),
    )
    expect(fresh.status).toBe(200)
    // Once sent, the outbox keeps no body (it held a working link).
    expect(await outboxOf(t, 'sent')).toMatchObject([{ to: 'ada@example.com', text: null }])
  })

  test('a link works once; the second use is 400 TOKEN_USED and changes nothing', async () => {
    await using t = await withMail()
    await signedIn(t)
    await t.post('/auth/password-reset/request', { email: 'ada@example.com' })
    const [mail] = await t.smtp.waitFor(1)
    const token = tokenOf(mail?.link ?? null)
    expect(
      (await t.post('/auth/password-reset/confirm', { token, password: NEW_PASSWORD })).status,
    ).toBe(200)
    const again = await t.post('/auth/password-reset/confirm', {
      token,
      password: 'yet another one',
    })
    expectEnvelope(again, 400, 'TOKEN_USED')
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: NEW_PASSWORD }),
    )
    expect(login.status).toBe(200)
  })

  test('an unknown address gets the same 202, no mail, and a suppressed row the limits count', async () => {
    await using t = await withMail()
    await signedIn(t)
    const unknown = await t.post('/auth/password-reset/request', { email: 'nobody@example.com' })
    const known = await t.post('/auth/password-reset/request', { email: 'ada@example.com' })
    expect(unknown.status).toBe(known.status)
    expect(unknown.body).toEqual(known.body)
    await t.smtp.waitFor(1)
    await t.deps.mail.worker.settled()
    expect(t.smtp.received.map((mail) => mail.to)).toEqual(['ada@example.com'])
    expect(await outboxOf(t, 'suppressed')).toMatchObject([
      { to: 'nobody@example.com', last_error: 'no account has this address', text: null },
    ])
  })

  test('bad tokens: unknown and malformed are TOKEN_INVALID or 422; an expired link is TOKEN_EXPIRED', async () => {
    await using t = await withMail()
    expectEnvelope(
      await t.post('/auth/password-reset/confirm', {
        token: `rat_${'A'.repeat(43)}`,
        password: NEW_PASSWORD,
      }),
      400,
      'TOKEN_INVALID',
    )
    expectEnvelope(
      await t.post('/auth/password-reset/confirm', {
        token: 'x'.repeat(500),
        password: NEW_PASSWORD,
      }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.post('/auth/password-reset/confirm', { token: 'rat_x' }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.post('/auth/password-reset/confirm', { token: 'rat_x', password: 'short' }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.post('/auth/password-reset/request', { email: 'ada@example.com', extra: 1 }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.post('/auth/password-reset/request', { email: 'not an address' }),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.call('POST', '/auth/password-reset/request', {
        body: 'email=a@b.c',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    expectEnvelope(
      await t.call('POST', '/auth/password-reset/request', {
        body: '{"email":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'BAD_REQUEST',
    )
    expect(await outboxOf(t)).toEqual([])
  })

  test('five messages an hour to one address, whoever asks: the sixth request is 429 with Retry-After, and sends nothing', async () => {
    await using t = await withMail()
    await signedIn(t)
    for (let i = 0; i < 5; i++) {
      expect(
        (await t.post('/auth/password-reset/request', { email: 'ada@example.com' })).status,
      ).toBe(202)
    }
    const refused = await t.post('/auth/password-reset/request', { email: 'Ada@Example.com' })
    expectEnvelope(refused, 429, 'RATE_LIMITED')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3500)
    // An unknown address is capped the same way (the answer tells nothing).
    for (let i = 0; i < 5; i++)
      await t.post('/auth/password-reset/request', { email: 'ghost@example.com' })
    expectEnvelope(
      await t.post('/auth/password-reset/request', { email: 'ghost@example.com' }),
      429,
      'RATE_LIMITED',
    )
    await t.smtp.waitFor(5)
    await t.deps.mail.worker.settled()
    expect(t.smtp.received).toHaveLength(5)
  })
})

describe('POST /auth/verify-email/request and /confirm', () => {
  test('a signed-in user asks with no body; the link verifies the address and the record shows when', async () => {
    await using t = await withMail()
    const { token, userId } = await signedIn(t)
    expect((await t.get(`/users/${userId}`)).body.email_verified_at).toBeNull()
    const asked = await t.call('POST', '/auth/verify-email/request', {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(asked.status).toBe(202)
    const [mail] = await t.smtp.waitFor(1)
    expect(mail?.subject).toBe('Confirm your email address')
    expect(mail?.link).toStartWith(`${PUBLIC_URL}/auth/verify-email?token=rat_`)
    const confirmed = await t.post('/v2/auth/verify-email/confirm', {
      token: tokenOf(mail?.link ?? null),
    })
    expect(confirmed.status).toBe(200)
    expect(confirmed.body.email_verified_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect((await t.get(`/users/${userId}`)).body.email_verified_at).toBe(
      confirmed.body.email_verified_at,
    )
    // Verified already: the same 202, and no second message.
    await t.call('POST', '/auth/verify-email/request', {
      headers: { authorization: `Bearer ${token}` },
    })
    await t.deps.mail.worker.settled()
    expect(t.smtp.received).toHaveLength(1)
  })

  test('without signing in, { email } is needed; a new address undoes the verification and ends the old links', async () => {
    await using t = await withMail()
    const { userId } = await signedIn(t)
    expectEnvelope(await t.call('POST', '/auth/verify-email/request'), 422, 'VALIDATION_ERROR')
    expect((await t.post('/auth/verify-email/request', { email: 'ada@example.com' })).status).toBe(
      202,
    )
    expect((await t.post('/auth/verify-email/request', { email: 'ada@example.com' })).status).toBe(
      202,
    )
    const [first, second] = await t.smtp.waitFor(2)
    expect(
      (await t.post('/auth/verify-email/confirm', { token: tokenOf(first?.link ?? null) })).status,
    ).toBe(200)
    const key = await apiKey(t)
    const moved = await t.call('PATCH', `/users/${userId}`, {
      json: { email: 'ada@new.example' },
      headers: { 'x-api-key': key },
    })
    expect(moved.body.email_verified_at).toBeNull()
    // The second link was sent to the old address: it ended with the change.
    expectEnvelope(
      await t.post('/auth/verify-email/confirm', { token: tokenOf(second?.link ?? null) }),
      400,
      'TOKEN_USED',
    )
  })
})

describe('GET /mail and POST /mail/{id}/resend', () => {
  test('without --smtp-url mail waits in the outbox with its working link; only users:write reads it', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = await apiKey(t)
    await t.call('POST', '/users', {
      json: { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      headers: { 'x-api-key': key },
    })
    expect(
      (await t.post('/auth/password-reset/request', { email: 'ada@example.com' })).status,
    ).toBe(202)
    await t.deps.mail.worker.settled()
    expectEnvelope(await t.get('/mail'), 401, 'UNAUTHORIZED')
    const readOnly = (await t.deps.apiKeys.create({ name: 'ro', scopes: ['users:read'] }, SYSTEM))
      .key
    expectEnvelope(await t.get('/mail', { headers: { 'x-api-key': readOnly } }), 403, 'FORBIDDEN')
    const page = await t.get('/mail', { headers: { 'x-api-key': key } })
    expect(page.status).toBe(200)
    expect(page.body.pagination.total).toBe(1)
    const [message] = page.body.data
    expect(message).toMatchObject({ flow: 'password-reset', status: 'pending', attempts: 0 })
    const link = /http:\/\/localhost\S+/.exec(message.text)?.[0] as string
    expect(link).toStartWith('http://localhost/auth/password-reset?token=rat_')
    expect(
      (
        await t.post('/auth/password-reset/confirm', {
          token: tokenOf(link),
          password: NEW_PASSWORD,
        })
      ).status,
    ).toBe(200)
    expect((await t.get(`/mail/${message.id}`, { headers: { 'x-api-key': key } })).body.id).toBe(
      message.id,
    )
    expectEnvelope(await t.get('/mail/999', { headers: { 'x-api-key': key } }), 404, 'NOT_FOUND')
    expectEnvelope(await t.get('/mail/abc', { headers: { 'x-api-key': key } }), 404, 'NOT_FOUND')
    expectEnvelope(
      await t.call('POST', `/mail/${message.id}/resend`, { headers: { 'x-api-key': key } }),
      409,
      'CONFLICT',
    )
    expectEnvelope(
      await t.get('/mail?status=lost', { headers: { 'x-api-key': key } }),
      422,
      'VALIDATION_ERROR',
    )
  })

  test('links are built from --public-url, never from a Host header a client sends', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    await t.deps.users.create({ name: 'Ada', email: 'ada@example.com', passwordHash: null }, SYSTEM)
    const response = await t.app.handle(
      new Request('http://evil.example:8080/auth/password-reset/request', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com' }),
      }),
    )
    expect(response.status).toBe(202)
    await t.deps.mail.worker.settled()
    const [message] = await outboxOf(t)
    expect(message?.text).toContain('http://localhost:8080/auth/password-reset?token=rat_')
    expect(message?.text).not.toContain('evil.example')
  })
})

/** The 6-digit code in a message's text. */
const codeOf = (text: string | undefined) => /\b(\d{6})\b/.exec(text ?? '')?.[1] as string

describe('POST /auth/magic-link/request and /confirm', () => {
  test('the link signs in like /login (token and cookie) and verifies the address; it works once', async () => {
    await using t = await withMail()
    const { userId } = await signedIn(t)
    expect((await t.post('/auth/magic-link/request', { email: 'ada@example.com' })).status).toBe(
      202,
    )
    const [mail] = await t.smtp.waitFor(1)
    expect(mail?.subject).toBe('Your sign-in link')
    expect(mail?.link).toStartWith(`${PUBLIC_URL}/auth/magic-link?token=rat_`)
    expect(codeOf(mail?.text)).toMatch(/^\d{6}$/)
    const token = tokenOf(mail?.link ?? null)
    const signIn = await t.post('/v1/auth/magic-link/confirm', { token })
    expect(signIn.status).toBe(200)
    expect(signIn.body).toMatchObject({
      user: { id: userId, email_verified_at: expect.any(String) },
      token_type: 'Bearer',
      expires_in: 3600,
    })
    expect(signIn.headers.get('set-cookie')).toContain('HttpOnly')
    const me = await t.get('/me', {
      headers: { authorization: `Bearer ${signIn.body.access_token}` },
    })
    expect(me.body.id).toBe(userId)
    expectEnvelope(await t.post('/auth/magic-link/confirm', { token }), 400, 'TOKEN_USED')
  })

  test('an account with TOTP gets mfa_required from its link, and the code finishes the sign-in', async () => {
    await using t = await withMail()
    const { token: bearerToken } = await signedIn(t)
    const headers = { authorization: `Bearer ${bearerToken}` }
    const enrolled = await t.post('/auth/totp/enroll', {}, { headers })
    const app = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(enrolled.body.secret) })
    const step = Math.floor(Date.now() / 30_000)
    await t.post(
      '/auth/totp/confirm',
      { code: app.generate({ timestamp: (step - 1) * 30_000 }) },
      { headers },
    )
    await t.post('/auth/magic-link/request', { email: 'ada@example.com' })
    const [mail] = await t.smtp.waitFor(1)
    const first = await t.post('/auth/magic-link/confirm', { token: tokenOf(mail?.link ?? null) })
    expect(first.body).toEqual({ mfa_required: true, mfa_token: expect.stringMatching(/^rmfa_/) })
    expect(first.headers.get('set-cookie')).toBeNull()
    const done = await t.post('/auth/mfa/verify', {
      mfa_token: first.body.mfa_token,
      code: app.generate({ timestamp: step * 30_000 }),
    })
    expect(done.status).toBe(200)
    expect(done.body.access_token).toMatch(/^rt_/)
  })

  test('the code takes five wrong tries, counted; then even the right one is refused', async () => {
    await using t = await withMail()
    await signedIn(t)
    await t.post('/auth/magic-link/request', { email: 'ada@example.com' })
    const [mail] = await t.smtp.waitFor(1)
    const code = codeOf(mail?.text)
    const wrong = code === '000000' ? '000001' : '000000'
    for (let i = 0; i < 5; i++) {
      expectEnvelope(
        await t.post('/auth/magic-link/confirm', { email: 'ada@example.com', code: wrong }),
        400,
        'TOKEN_INVALID',
      )
    }
    expectEnvelope(
      await t.post('/auth/magic-link/confirm', { email: 'ada@example.com', code }),
      400,
      'TOKEN_EXPIRED',
    )
    // A fresh message, a fresh code.
    await t.post('/auth/magic-link/request', { email: 'ada@example.com' })
    const [, second] = await t.smtp.waitFor(2)
    const signIn = await t.post('/auth/magic-link/confirm', {
      email: 'ADA@example.com',
      code: codeOf(second?.text),
    })
    expect(signIn.status).toBe(200)
    expectEnvelope(
      await t.post('/auth/magic-link/confirm', { email: 'nobody@example.com', code }),
      400,
      'TOKEN_INVALID',
    )
    expectEnvelope(
      await t.post('/auth/magic-link/confirm', { email: 'ada@example.com', code: '12345' }),
      422,
      'VALIDATION_ERROR',
    )
  })
})

describe('POST /auth/email-change/request and /confirm', () => {
  test('the link goes to the new address, the old one is told; confirming moves the account, verified', async () => {
    await using t = await withMail()
    const { token, userId } = await signedIn(t)
    const bearer = { authorization: `Bearer ${token}` }
    const asked = await t.post(
      '/auth/email-change/request',
      { new_email: 'ada@new.example', current_password: PASSWORD },
      { headers: bearer },
    )
    expect(asked.status).toBe(202)
    const received = await t.smtp.waitFor(2)
    const toNew = received.find((mail) => mail.to === 'ada@new.example')
    const toOld = received.find((mail) => mail.to === 'ada@example.com')
    expect(toNew?.link).toStartWith(`${PUBLIC_URL}/auth/email-change?token=rat_`)
    expect(toOld?.subject).toBe('Your email address is changing')
    expect(toOld?.text).toContain('ada@new.example')
    expect(toOld?.link).toBeNull()
    // Nothing changes until the new address confirms.
    expect((await t.get(`/users/${userId}`)).body.email).toBe('ada@example.com')
    const confirmed = await t.post('/auth/email-change/confirm', {
      token: tokenOf(toNew?.link ?? null),
    })
    expect(confirmed.status).toBe(200)
    expect(confirmed.body).toMatchObject({
      email: 'ada@new.example',
      email_verified_at: expect.any(String),
    })
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@new.example', password: PASSWORD }),
    )
    expect(login.status).toBe(200)
  })

  test('refused: without signing in 401, the current address 422, another account’s 409; nothing is mailed', async () => {
    await using t = await withMail()
    const { token } = await signedIn(t)
    await signedIn(t, 'bo@example.com')
    const bearer = { authorization: `Bearer ${token}` }
    expectEnvelope(
      await t.post('/auth/email-change/request', { new_email: 'x@example.com' }),
      401,
      'UNAUTHORIZED',
    )
    expectEnvelope(
      await t.post(
        '/auth/email-change/request',
        { new_email: 'ADA@example.com', current_password: PASSWORD },
        { headers: bearer },
      ),
      422,
      'VALIDATION_ERROR',
    )
    expectEnvelope(
      await t.post(
        '/auth/email-change/request',
        { new_email: 'Bo@example.com', current_password: PASSWORD },
        { headers: bearer },
      ),
      409,
      'CONFLICT',
    )
    const key = await apiKey(t)
    expectEnvelope(
      await t.post(
        '/auth/email-change/request',
        { new_email: 'x@example.com' },
        { headers: { 'x-api-key': key } },
      ),
      401,
      'UNAUTHORIZED',
    )
    await t.deps.mail.worker.settled()
    expect(t.smtp.received).toHaveLength(0)
  })
})

const MINUTE = 60 * 1000

describe('POST /auth/email-change/request asks for the step-up of PATCH /users/{id} {email}', () => {
  const START = Date.parse('2026-11-29T08:00:00Z')
  const ask = (t: TestApp, token: string, body: Record<string, string>) =>
    t.post(
      '/auth/email-change/request',
      { new_email: 'mallory@evil.example', ...body },
      { headers: { authorization: `Bearer ${token}` } },
    )

  test('a token alone is 403 REAUTHENTICATION_REQUIRED, fresh or not, and nothing is mailed or changed', async () => {
    const clock = new ManualClock(START)
    await using t = await withMail(clock)
    const { token, userId } = await signedIn(t)
    // Just signed in: an account with a password still gives it (as a PATCH does).
    const fresh = expectEnvelope(await ask(t, token, {}), 403, 'REAUTHENTICATION_REQUIRED')
    expect(fresh.details).toEqual([
      {
        field: 'current_password',
        message: 'is required, with the account’s own credential, to change its password or email',
        received: '',
      },
    ])
    clock.advance(6 * MINUTE)
    expectEnvelope(await ask(t, token, {}), 403, 'REAUTHENTICATION_REQUIRED')
    // Checked before the address: another account's address is not told apart.
    await signedIn(t, 'bo@example.com')
    expectEnvelope(
      await ask(t, token, { new_email: 'bo@example.com' }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    await t.deps.mail.worker.settled()
    expect(await outboxOf(t)).toEqual([])
    expect((await t.get(`/users/${userId}`)).body.email).toBe('ada@example.com')
  })

  test('a wrong current_password is 403, never echoed, and counts as a failed sign-in of the address', async () => {
    await using t = await withMail()
    const { token } = await signedIn(t)
    const wrong = await ask(t, token, { current_password: 'not my password' })
    const error = expectEnvelope(wrong, 403, 'REAUTHENTICATION_REQUIRED')
    expect(error.details[0]).toMatchObject({ field: 'current_password', received: '[redacted]' })
    expect(wrong.text).not.toContain('not my password')
    for (let i = 0; i < 9; i++) await ask(t, token, { current_password: `guess ${i}` })
    // The address's budget of ten is spent: even the right password waits, and so does /login.
    expectEnvelope(await ask(t, token, { current_password: PASSWORD }), 429, 'RATE_LIMITED')
    expectEnvelope(
      await t.call('POST', '/login', form({ email: 'ada@example.com', password: PASSWORD })),
      429,
      'RATE_LIMITED',
    )
    const failures = await t.get('/audit?action=login.failed', {
      headers: { 'x-api-key': await apiKey(t) },
    })
    expect(failures.body.data).toHaveLength(10)
  })

  test('with current_password a token signed in long ago moves the address', async () => {
    const clock = new ManualClock(START)
    await using t = await withMail(clock)
    const { token } = await signedIn(t)
    clock.advance(50 * MINUTE)
    expect((await ask(t, token, { current_password: PASSWORD })).status).toBe(202)
    await t.smtp.waitFor(2)
    expect(t.smtp.received.map((mail) => mail.to).sort()).toEqual([
      'ada@example.com',
      'mallory@evil.example',
    ])
  })

  test('an account without a password: a sign-in within 5 minutes moves it, an older one is 403', async () => {
    const clock = new ManualClock(START)
    await using t = await withMail(clock)
    const created = await t.post('/users', { name: 'Bo', email: 'bo@example.com' })
    // Signed in by a mailed link: no password, no passkey, and still an account to protect.
    const issued = await t.deps.credentials.issue(created.body.id, SYSTEM, 'magic_link')
    clock.advance(5 * MINUTE)
    expect((await ask(t, issued.accessToken, {})).status).toBe(202)
    clock.advance(1)
    const stale = expectEnvelope(
      await ask(t, issued.accessToken, { new_email: 'bo@new.example' }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    expect(stale.details[0]?.message).toContain('sign in again (within 5 minutes)')
  })
})

/** The next message with this subject to `to`, once it has arrived. */
async function mailTo(t: Awaited<ReturnType<typeof withMail>>, to: string, subject: string) {
  for (let count = 1; ; count++) {
    const found = (await t.smtp.waitFor(count)).find(
      (mail) => mail.to === to && mail.subject === subject,
    )
    if (found !== undefined) return found
  }
}

const CHANGED = 'Your email address was changed'

/** Ada signs in, moves to `to` by mail (link confirmed), and the old address's notice arrives. */
async function movedByMail(t: Awaited<ReturnType<typeof withMail>>, to = 'ada@new.example') {
  const ada = await signedIn(t)
  const bearer = { authorization: `Bearer ${ada.token}` }
  await t.post(
    '/auth/email-change/request',
    { new_email: to, current_password: PASSWORD },
    { headers: bearer },
  )
  const link = await mailTo(t, to, 'Confirm your new email address')
  const confirmed = await t.post('/auth/email-change/confirm', { token: tokenOf(link.link) })
  expect(confirmed.body.email).toBe(to)
  return { ...ada, notice: await mailTo(t, 'ada@example.com', CHANGED) }
}

describe('the old address’s link that undoes an email change (CONTRACT section 17)', () => {
  test('a confirmed change mails the old address a notice; its link moves the account back, verified, and signs it out everywhere', async () => {
    await using t = await withMail()
    const ada = await movedByMail(t)
    expect(ada.notice.text).toContain('changed from ada@example.com to ada@new.example')
    expect(ada.notice.link).toStartWith(`${PUBLIC_URL}/auth/email-change-undo?token=rat_`)
    expect(ada.notice.html).toContain(`href="${ada.notice.link}"`)
    expect(ada.notice.text).toContain('lasts 7 days')
    // Whoever moved it signs in at the new address and asks for a reset link there.
    const thief = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@new.example', password: PASSWORD }),
    )
    expect(thief.status).toBe(200)
    await t.post('/auth/password-reset/request', { email: 'ada@new.example' })
    const reset = await mailTo(t, 'ada@new.example', 'Reset your password')

    const url = new URL(ada.notice.link as string)
    const page = await t.get(url.pathname + url.search)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.text).toContain('Undo the change')
    expect((await t.get(`/users/${ada.userId}`)).body.email).toBe('ada@new.example')

    const undone = await t.post('/v2/auth/email-change-undo/confirm', {
      token: tokenOf(ada.notice.link),
    })
    expect(undone.status).toBe(200)
    expect(undone.body).toMatchObject({
      id: ada.userId,
      email: 'ada@example.com',
      email_verified_at: expect.any(String),
    })
    const credentials: Record<string, string>[] = [
      { authorization: `Bearer ${ada.token}` },
      { authorization: `Bearer ${thief.body.access_token}` },
      { cookie: ada.cookie },
    ]
    for (const headers of credentials) {
      expectEnvelope(await t.get('/me', { headers }), 401, 'UNAUTHORIZED')
    }
    expectEnvelope(
      await t.post('/auth/password-reset/confirm', {
        token: tokenOf(reset.link),
        password: NEW_PASSWORD,
      }),
      400,
      'TOKEN_USED',
    )
    expectEnvelope(
      await t.post('/auth/email-change-undo/confirm', { token: tokenOf(ada.notice.link) }),
      400,
      'TOKEN_USED',
    )
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    expect(login.status).toBe(200)
    const events = await t.get(`/audit?action=user.updated&target_id=${ada.userId}&limit=2`, {
      headers: { 'x-api-key': await apiKey(t) },
    })
    // Newest first: the old address verified again, and the undo itself, the link's holder's.
    expect(events.body.data[1]).toMatchObject({
      actor: { type: 'user', id: String(ada.userId) },
      changes: {
        email: { before: 'ada@new.example', after: 'ada@example.com' },
        signed_out: { changed: true },
      },
    })
  })

  test('the account moving itself by PATCH gets the notice too; the undo outlives a new password and a further move, and ends that move’s own undo link', async () => {
    await using t = await withMail()
    const ada = await signedIn(t)
    const moved = await t.call('PATCH', `/users/${ada.userId}`, {
      json: { email: 'ada@new.example', current_password: PASSWORD },
      headers: { authorization: `Bearer ${ada.token}` },
    })
    expect(moved.status).toBe(200)
    const first = await mailTo(t, 'ada@example.com', CHANGED)
    // Whoever moved it resets the password from the new address, then moves on again.
    await t.post('/auth/password-reset/request', { email: 'ada@new.example' })
    const reset = await mailTo(t, 'ada@new.example', 'Reset your password')
    await t.post('/auth/password-reset/confirm', {
      token: tokenOf(reset.link),
      password: NEW_PASSWORD,
    })
    const again = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@new.example', password: NEW_PASSWORD }),
    )
    await t.call('PATCH', `/users/${ada.userId}`, {
      json: { email: 'ada@third.example', current_password: NEW_PASSWORD },
      headers: { authorization: `Bearer ${again.body.access_token}` },
    })
    const second = await mailTo(t, 'ada@new.example', CHANGED)
    expect(second.text).toContain('changed from ada@new.example to ada@third.example')

    const undone = await t.post('/auth/email-change-undo/confirm', { token: tokenOf(first.link) })
    expect(undone.body.email).toBe('ada@example.com')
    expectEnvelope(
      await t.get('/me', { headers: { authorization: `Bearer ${again.body.access_token}` } }),
      401,
      'UNAUTHORIZED',
    )
    expectEnvelope(
      await t.post('/auth/email-change-undo/confirm', { token: tokenOf(second.link) }),
      400,
      'TOKEN_USED',
    )
    // The password the thief set stays: the old address resets it.
    await t.post('/auth/password-reset/request', { email: 'ada@example.com' })
    const back = await mailTo(t, 'ada@example.com', 'Reset your password')
    expect(
      (
        await t.post('/auth/password-reset/confirm', {
          token: tokenOf(back.link),
          password: 'mine again, for good',
        })
      ).status,
    ).toBe(200)
  })

  test('the old address is held for the account while its link lives: nobody else takes it (409), and the link works', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using t = await withMail(clock)
    const ada = await movedByMail(t)
    const key = { 'x-api-key': await apiKey(t) }
    const taken = await t.post(
      '/users',
      { name: 'Other', email: 'ADA@example.com' },
      { headers: key },
    )
    expect(expectEnvelope(taken, 409, 'CONFLICT').details[0]?.field).toBe('email')
    const token = tokenOf(ada.notice.link)
    expect((await t.post('/auth/email-change-undo/confirm', { token })).body.email).toBe(
      'ada@example.com',
    )
  })

  test('once the link has expired, the old address is free for anyone again', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using t = await withMail(clock)
    await movedByMail(t)
    clock.advance(7 * 24 * 60 * MINUTE + 1)
    const key = { 'x-api-key': await apiKey(t) }
    const other = await t.post(
      '/users',
      { name: 'Other', email: 'ada@example.com' },
      { headers: key },
    )
    expect(other.status).toBe(201)
  })

  test('the link lasts 7 days: then TOKEN_EXPIRED, and the account stays where it is', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using t = await withMail(clock)
    const ada = await movedByMail(t)
    clock.advance(7 * 24 * 60 * MINUTE)
    expectEnvelope(
      await t.post('/auth/email-change-undo/confirm', { token: tokenOf(ada.notice.link) }),
      400,
      'TOKEN_EXPIRED',
    )
    expect((await t.get(`/users/${ada.userId}`)).body.email).toBe('ada@new.example')
  })

  test('a key’s or an admin’s change of the address mails no notice: the authority that made it undoes it', async () => {
    await using t = await withMail()
    const ada = await signedIn(t)
    const moved = await t.call('PATCH', `/users/${ada.userId}`, {
      json: { email: 'ada@new.example' },
      headers: { 'x-api-key': await apiKey(t) },
    })
    expect(moved.status).toBe(200)
    await t.deps.mail.worker.settled()
    expect(await outboxOf(t)).toEqual([])
  })
})

describe('POST /users/{id}/invite and /auth/invitation/confirm', () => {
  test('an admin’s key invites a user without a password; accepting sets it and verifies the address', async () => {
    await using t = await withMail()
    const key = await apiKey(t)
    const created = await t.post('/users', { name: 'Cy', email: 'cy@example.com' })
    const invited = await t.call('POST', `/users/${created.body.id}/invite`, {
      headers: { 'x-api-key': key },
    })
    expect(invited.status).toBe(202)
    const [mail] = await t.smtp.waitFor(1)
    expect(mail).toMatchObject({ to: 'cy@example.com', subject: 'You are invited' })
    expect(mail?.link).toStartWith(`${PUBLIC_URL}/auth/invitation?token=rat_`)
    const page = await t.get('/auth/invitation')
    expect(page.text).toContain('type="password"')
    const accepted = await t.post('/auth/invitation/confirm', {
      token: tokenOf(mail?.link ?? null),
      password: NEW_PASSWORD,
    })
    expect(accepted.status).toBe(200)
    expect(accepted.body.email_verified_at).not.toBeNull()
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'cy@example.com', password: NEW_PASSWORD }),
    )
    expect(login.status).toBe(200)
  })

  test('who may invite: a key with users:write or an admin; not a read-only key, not anonymously; a missing user is 404', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = await apiKey(t)
    const readOnly = (await t.deps.apiKeys.create({ name: 'ro', scopes: ['users:read'] }, SYSTEM))
      .key
    await t.deps.users.create({ name: 'Cy', email: 'cy@example.com', passwordHash: null }, SYSTEM)
    expectEnvelope(await t.call('POST', '/users/1/invite'), 401, 'UNAUTHORIZED')
    expectEnvelope(
      await t.call('POST', '/users/1/invite', { headers: { 'x-api-key': readOnly } }),
      403,
      'FORBIDDEN',
    )
    expectEnvelope(
      await t.call('POST', '/users/9/invite', { headers: { 'x-api-key': key } }),
      404,
      'NOT_FOUND',
    )
    expectEnvelope(
      await t.call('POST', '/users/x/invite', { headers: { 'x-api-key': key } }),
      404,
      'NOT_FOUND',
    )
    expect(
      (await t.call('POST', '/users/1/invite', { headers: { 'x-api-key': key } })).status,
    ).toBe(202)
  })
})
