import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { SoftAuthenticator } from '../helpers/authenticator'
import { runBinary } from '../helpers/binary'
import { startCluster } from '../helpers/cluster'

// Passkeys and TOTP on two instances of the compiled binary sharing PostgreSQL (CONTRACT
// section 15): a ceremony begun on one instance is finished on the other, and a single-use
// thing (a challenge, a TOTP code) used on both at once works on exactly one.

setDefaultTimeout(90_000)

const PASSWORD = 'a shared passphrase'
const PUBLIC_URL = 'https://id.example.com'
const ORIGIN = PUBLIC_URL

/** What these routes answer, as far as this test reads it. */
interface Answer {
  [key: string]: unknown
  access_token?: string
  mfa_token?: string
  mfa_required?: boolean
  secret?: string
  rp?: unknown
  user?: { email: string }
}

async function post(base: string, path: string, json: unknown, token?: string) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(json),
  })
  return { status: response.status, body: (await response.json()) as Answer }
}

async function withAccount() {
  const cluster = await startCluster({ flags: ['--public-url', PUBLIC_URL] })
  const made = await runBinary(
    [
      'users',
      'create',
      '--name',
      'Ada',
      '--email',
      'ada@example.com',
      '--password-stdin',
      ...cluster.cliFlags,
    ],
    { stdin: `${PASSWORD}\n`, env: cluster.env },
  )
  expect(made.code).toBe(0)
  const [a, b] = cluster.instances.map((instance) => instance.url) as [string, string]
  const login = await post(a, '/login', { email: 'ada@example.com', password: PASSWORD })
  expect(login.status).toBe(200)
  return { cluster, a, b, token: login.body.access_token as string }
}

describe('passkeys and TOTP on two instances sharing PostgreSQL', () => {
  test('a registration begun on one instance is finished on the other, and so is a sign-in', async () => {
    const { cluster, a, b, token } = await withAccount()
    await using _ = cluster
    const authenticator = await SoftAuthenticator.create()
    const options = await post(a, '/auth/passkeys/register/options', {}, token)
    expect(options.body.rp).toEqual({ id: 'id.example.com', name: 'id.example.com' })
    const registration = authenticator.register(options.body as never, {
      origin: ORIGIN,
      rpId: 'id.example.com',
    })
    expect((await post(b, '/auth/passkeys/register/verify', registration, token)).status).toBe(201)
    const loginOptions = await post(b, '/auth/passkeys/login/options', {})
    const assertion = await authenticator.assert(loginOptions.body as never, {
      origin: ORIGIN,
      rpId: 'id.example.com',
    })
    // The same assertion on both at once: the challenge is spent by one of them.
    const [first, second] = await Promise.all([
      post(a, '/auth/passkeys/login/verify', assertion),
      post(b, '/auth/passkeys/login/verify', assertion),
    ])
    expect([first.status, second.status].sort()).toEqual([200, 400])
    const winner = first.status === 200 ? first : second
    expect(winner.body.user?.email).toBe('ada@example.com')
    // The page must be the relying party's: localhost is not id.example.com.
    const other = await post(a, '/auth/passkeys/login/options', {})
    const wrongOrigin = await authenticator.assert(other.body as never, {
      origin: 'http://localhost:3000',
      rpId: 'id.example.com',
    })
    expect((await post(b, '/auth/passkeys/login/verify', wrongOrigin)).status).toBe(400)
  })

  test('one TOTP code sent to both instances at once signs in once', async () => {
    const { cluster, a, b, token } = await withAccount()
    await using _ = cluster
    const enrolled = await post(a, '/auth/totp/enroll', {}, token)
    const app = new OTPAuth.TOTP({
      secret: OTPAuth.Secret.fromBase32(enrolled.body.secret as string),
    })
    const step = Math.floor(Date.now() / 30_000)
    const confirm = await post(
      b,
      '/auth/totp/confirm',
      { code: app.generate({ timestamp: (step - 1) * 30_000 }) },
      token,
    )
    expect(confirm.status).toBe(200)
    const tokens = await Promise.all(
      [a, b].map(async (base) => {
        const answer = await post(base, '/login', { email: 'ada@example.com', password: PASSWORD })
        expect(answer.body.mfa_required).toBe(true)
        return answer.body.mfa_token as string
      }),
    )
    const code = app.generate({ timestamp: step * 30_000 })
    const replies = await Promise.all([
      post(b, '/auth/mfa/verify', { mfa_token: tokens[0], code }),
      post(a, '/auth/mfa/verify', { mfa_token: tokens[1], code }),
    ])
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 401])
  })
})
