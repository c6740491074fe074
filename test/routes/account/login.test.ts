import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { passwordWorkload } from '../../../src/auth/passwords'
import { expectEnvelope, makeTestApp } from '../../helpers/app'
import { apiKey, basic, form, PASSWORD } from '../../helpers/auth'

// Many sign-ins here each run argon2id (tens of ms).
setDefaultTimeout(30_000)

const ada = { name: 'Ada', email: 'ada@example.com', password: PASSWORD }

describe('POST /login', () => {
  test.each([
    ['username', 'password'],
    ['email', 'password'],
    ['login', 'pass'],
    ['email', 'pass'],
  ])(
    'a form with %s and %s signs in: token, user, session cookie',
    async (idField, secretField) => {
      await using t = await makeTestApp()
      await t.post('/users', ada)
      const reply = await t.call(
        'POST',
        '/login',
        form({ [idField]: 'ADA@example.com', [secretField]: PASSWORD }),
      )
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({
        user: expect.objectContaining({ id: 1, email: 'ada@example.com' }),
        access_token: expect.stringMatching(/^rt_[A-Za-z0-9_-]{43}$/),
        token_type: 'Bearer',
        expires_in: 3600,
      })
      expect(reply.headers.get('set-cookie')).toMatch(
        /^session=rs_[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Lax$/,
      )
      expect(reply.headers.get('cache-control')).toBe('no-store')
      expect(reply.text).not.toContain('password_hash')
    },
  )

  test('JSON and multipart bodies sign in too', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    expect((await t.post('/login', { email: ada.email, password: PASSWORD })).status).toBe(200)
    const multipart = new FormData()
    multipart.set('username', ada.email)
    multipart.set('pass', PASSWORD)
    expect((await t.call('POST', '/login', { body: multipart })).status).toBe(200)
  })

  test('an HTML form with a named button signs in: fields it does not know are ignored', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const fields = { email: ada.email, password: PASSWORD, submit: 'Sign in', remember: 'on' }
    expect((await t.call('POST', '/login', form(fields))).status).toBe(200)
    expect((await t.post('/login', fields)).status).toBe(200)
  })

  test('a wrong password and an unknown email get the same 401, in similar time', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const timed = async (email: string) => {
      const started = performance.now()
      const reply = await t.call('POST', '/login', form({ email, password: 'not the password' }))
      return { reply, ms: performance.now() - started }
    }
    await timed('warm@up.example') // the dummy hash is made on first use
    const wrongPassword = await timed(ada.email)
    const unknownEmail = await timed('nobody@example.com')
    for (const { reply } of [wrongPassword, unknownEmail]) {
      expect(expectEnvelope(reply, 401, 'INVALID_CREDENTIALS').message).toBe(
        'The email or password is wrong',
      )
      expect(reply.headers.get('set-cookie')).toBeNull()
    }
    expect(wrongPassword.reply.body.error).toEqual(unknownEmail.reply.body.error)
    // Both run one argon2id verification; neither is an order of magnitude faster.
    const ratio = wrongPassword.ms / unknownEmail.ms
    expect(ratio).toBeGreaterThan(0.3)
    expect(ratio).toBeLessThan(3)
  })

  test('the username signs in as the email does, in any case, on /login and with Basic', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { ...ada, username: 'Ada.L' })
    const reply = await t.call('POST', '/login', form({ username: 'ADA.l', password: PASSWORD }))
    expect(reply.status).toBe(200)
    expect(reply.body.user).toMatchObject({ id: 1, username: 'Ada.L' })
    const secure = await t.call('GET', '/secure', {
      headers: { authorization: basic('ada.l', PASSWORD) },
    })
    expect(secure.status).toBe(200)
    // Twice more: the second comes from the cache, which knows the username too.
    for (const name of ['ada.l', 'ada@example.com']) {
      const again = await t.call('GET', '/secure', {
        headers: { authorization: basic(name, PASSWORD) },
      })
      expect(again.status).toBe(200)
    }
    expectEnvelope(
      await t.call('POST', '/login', form({ username: 'Ada.L', password: 'wrong password!' })),
      401,
      'INVALID_CREDENTIALS',
    )
  })

  test('no name signs in to two accounts: a username that is another email, or the reverse, is 409', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { ...ada, username: 'ada' })
    const bob = {
      name: 'Bob',
      email: 'bob@example.com',
      username: 'ADA@example.com',
      password: 'bobs password is long',
    }
    const taken = expectEnvelope(await t.post('/users', bob), 409, 'CONFLICT')
    expect(taken.details[0]?.field).toBe('username')
    await t.post('/users', { ...bob, username: 'b.ob@example.com' })
    // Carol's address is Bob's username: it would sign in to Carol before Bob.
    const carol = { name: 'Carol', email: 'B.OB@example.com', password: PASSWORD }
    expect(expectEnvelope(await t.post('/users', carol), 409, 'CONFLICT').details[0]?.field).toBe(
      'email',
    )
    const patched = await t.call('PATCH', '/users/1', { json: { username: 'bob@example.com' } })
    expect(expectEnvelope(patched, 409, 'CONFLICT').details[0]?.field).toBe('username')
    // A user's own email as its username is no clash: the username is the email again.
    const own = await t.call('PATCH', '/users/2', { json: { username: 'BOB@example.com' } })
    expect(own.body.username).toBe('BOB@example.com')
    const asBob = await t.call(
      'POST',
      '/login',
      form({ email: 'bob@example.com', password: 'bobs password is long' }),
    )
    expect(asBob.body.user.id).toBe(2)
    const asAda = await t.call('POST', '/login', form({ username: 'ada', password: PASSWORD }))
    expect(asAda.body.user.id).toBe(1)
  })

  test('a deactivated account is refused with 403 after the right password, and 401 with a wrong one', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const warm = await t.call('GET', '/secure', {
      headers: { authorization: basic(ada.email, PASSWORD) },
    })
    expect(warm.status).toBe(200)
    const admin = { 'x-api-key': await apiKey(t) }
    const off = await t.call('PATCH', '/users/1', { json: { active: false }, headers: admin })
    expect(off.body.active).toBe(false)
    const refused = expectEnvelope(
      await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD })),
      403,
      'FORBIDDEN',
    )
    expect(refused.message).toBe('This account is deactivated; an administrator can restore it')
    expectEnvelope(
      await t.call('POST', '/login', form({ email: ada.email, password: 'wrong password!' })),
      401,
      'INVALID_CREDENTIALS',
    )
    // Basic, though its verification is cached.
    expectEnvelope(
      await t.call('GET', '/secure', { headers: { authorization: basic(ada.email, PASSWORD) } }),
      403,
      'FORBIDDEN',
    )
    await t.call('PATCH', '/users/1', { json: { active: true }, headers: admin })
    expect(
      (await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))).status,
    ).toBe(200)
  })

  test('a user created without a password cannot sign in', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'No Pass', email: 'nopass@example.com' })
    const before = passwordWorkload().verifications
    const reply = await t.call(
      'POST',
      '/login',
      form({ email: 'nopass@example.com', password: 'anything at all' }),
    )
    expectEnvelope(reply, 401, 'INVALID_CREDENTIALS')
    expect(passwordWorkload().verifications).toBe(before + 1)
  })

  test('missing fields are a 422 naming each, without echoing the password', async () => {
    await using t = await makeTestApp()
    // A form of only other fields (an empty body is a 400: test/http/json-body.test.ts).
    const none = expectEnvelope(
      await t.call('POST', '/login', form({ submit: 'Sign in' })),
      422,
      'VALIDATION_ERROR',
    )
    expect(none.details).toEqual([
      { field: 'email', message: 'is required (as email, username or login)', received: '' },
      { field: 'password', message: 'is required (as password or pass)', received: '' },
    ])
    const onlySecret = await t.call('POST', '/login', form({ password: 'SeCrEt-Echo-123' }))
    expect(expectEnvelope(onlySecret, 422, 'VALIDATION_ERROR').details.map((d) => d.field)).toEqual(
      ['email'],
    )
    expect(onlySecret.text).not.toContain('SeCrEt-Echo-123')
    const wrongType = await t.post('/login', { email: 'a@b.co', password: 12345678 })
    expect(expectEnvelope(wrongType, 422, 'VALIDATION_ERROR').details).toEqual([
      { field: 'password', message: 'must be at most 1024 characters', received: '[redacted]' },
    ])
  })

  test('a field given twice, or a file part, is a 422', async () => {
    await using t = await makeTestApp()
    const twice = await t.call('POST', '/login', {
      body: 'email=a%40b.co&email=c%40d.co&password=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(expectEnvelope(twice, 422, 'VALIDATION_ERROR').details[0]?.field).toBe('email')
    const multipart = new FormData()
    multipart.set('email', 'a@b.co')
    multipart.set('password', new File(['x'], 'p.txt'))
    const file = await t.call('POST', '/login', { body: multipart })
    expect(expectEnvelope(file, 422, 'VALIDATION_ERROR').details[0]?.field).toBe('password')
  })

  test.each(['text/plain', 'application/xml', ''])('Content-Type %p is 415', async (type) => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/login', {
      body: 'email=a@b.co&password=x',
      headers: type === '' ? {} : { 'content-type': type },
    })
    expectEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('malformed bodies are 400; oversized ones 413', async () => {
    await using t = await makeTestApp()
    const json = await t.call('POST', '/login', {
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    })
    expectEnvelope(json, 400, 'BAD_REQUEST')
    const multipart = await t.call('POST', '/login', {
      body: 'garbage',
      headers: { 'content-type': 'multipart/form-data; boundary=zzz' },
    })
    expectEnvelope(multipart, 400, 'BAD_REQUEST')
    const big = await t.call(
      'POST',
      '/login',
      form({ email: 'a@b.co', password: 'x'.repeat(20_000) }),
    )
    expectEnvelope(big, 413, 'PAYLOAD_TOO_LARGE')
  })

  test('the cookie is Secure with --cookie-secure, or behind --trust-proxy with X-Forwarded-Proto: https', async () => {
    {
      await using t = await makeTestApp({ cookieSecure: true })
      await t.post('/users', ada)
      const reply = await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))
      expect(reply.headers.get('set-cookie')).toContain('; Secure')
    }
    {
      await using t = await makeTestApp({ trustProxy: { hops: 1 } })
      await t.post('/users', ada)
      const login = (proto: string) =>
        t.call('POST', '/login', {
          ...form({ email: ada.email, password: PASSWORD }),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-forwarded-proto': proto,
          },
        })
      expect((await login('https')).headers.get('set-cookie')).toContain('; Secure')
      expect((await login('http')).headers.get('set-cookie')).not.toContain('Secure')
    }
    {
      // Without --trust-proxy the header is anyone's to send, so it is ignored.
      await using t = await makeTestApp()
      await t.post('/users', ada)
      const reply = await t.call('POST', '/login', {
        ...form({ email: ada.email, password: PASSWORD }),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-proto': 'https',
        },
      })
      expect(reply.headers.get('set-cookie')).not.toContain('Secure')
    }
  })
})

describe('the login limiter', () => {
  test('10 failures for one address: 429 with Retry-After, even for the right password, until the window passes', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    await using t = await makeTestApp({}, () => new Date(clock))
    await t.post('/users', ada)
    for (let i = 0; i < 10; i++) {
      expectEnvelope(
        await t.call('POST', '/login', form({ email: ada.email, password: `wrong ${i}` })),
        401,
        'INVALID_CREDENTIALS',
      )
      clock += 1000
    }
    const limited = await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))
    expectEnvelope(limited, 429, 'RATE_LIMITED')
    // The first failure was 10 s ago; it leaves the 15-minute window in 890 s.
    expect(limited.headers.get('retry-after')).toBe('890')
    expect(limited.headers.get('set-cookie')).toBeNull()
    // Another address from the same place is not affected.
    await t.post('/users', { name: 'Bob', email: 'bob@example.com', password: PASSWORD })
    expect(
      (await t.call('POST', '/login', form({ email: 'bob@example.com', password: PASSWORD })))
        .status,
    ).toBe(200)
    clock += 890_000
    expect(
      (await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))).status,
    ).toBe(200)
  })

  test('50 concurrent wrong logins for one address: at most 10 passwords checked, the rest 429; another address still signs in', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    await t.post('/users', { name: 'Bob', email: 'bob@example.com', password: PASSWORD })
    const guesses = Array.from({ length: 50 }, (_, i) =>
      t.call('POST', '/login', form({ email: ada.email, password: `wrong ${i}` })),
    )
    const bob = t.call('POST', '/login', form({ email: 'bob@example.com', password: PASSWORD }))
    const replies = await Promise.all(guesses)
    const statuses = replies.map((reply) => reply.status)
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(10)
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(40)
    expect(statuses.every((status) => status === 401 || status === 429)).toBe(true)
    for (const reply of replies.filter((r) => r.status === 429)) {
      expectEnvelope(reply, 429, 'RATE_LIMITED')
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    expect((await bob).status).toBe(200)
    // Settled: ten failures are on the books, so the right password is refused too.
    expectEnvelope(
      await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD })),
      429,
      'RATE_LIMITED',
    )
  })

  test('50 concurrent wrong Basic credentials on /secure: at most 10 checked, the rest 429', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        t.get('/secure', { headers: { authorization: basic(ada.email, `wrong ${i}`) } }),
      ),
    )
    const statuses = replies.map((reply) => reply.status)
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(10)
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(40)
    expect(
      (await t.get('/secure', { headers: { authorization: basic(ada.email, PASSWORD) } })).status,
    ).toBe(429)
  })

  test('only 401 answers count: 422s and successes do not', async () => {
    await using t = await makeTestApp()
    await t.post('/users', ada)
    for (let i = 0; i < 12; i++) await t.call('POST', '/login', form({ email: ada.email }))
    for (let i = 0; i < 12; i++)
      await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))
    expect(
      (await t.call('POST', '/login', form({ email: ada.email, password: PASSWORD }))).status,
    ).toBe(200)
  })

  test('50 failures from one IP (behind --trust-proxy): 429 for every address from it', async () => {
    await using t = await makeTestApp({ trustProxy: { hops: 1 } })
    await t.post('/users', ada)
    const from = (ip: string, email: string, password: string) =>
      t.call('POST', '/login', {
        body: new URLSearchParams({ email, password }).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': `198.51.100.77, ${ip}`,
        },
      })
    for (let i = 0; i < 50; i++) await from('203.0.113.7', `user${i}@example.com`, 'wrong password')
    expectEnvelope(await from('203.0.113.7', ada.email, PASSWORD), 429, 'RATE_LIMITED')
    expect((await from('198.51.100.1', ada.email, PASSWORD)).status).toBe(200)
  })
})
