import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { tempDir } from '../helpers/app'
import { SoftAuthenticator } from '../helpers/authenticator'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'

// Passkeys and TOTP through the compiled binary as a user runs it (the WebAuthn library and the
// migrations are inside it): a passkey for a site named by --webauthn-origins, TOTP on, the
// second step, Basic refused, an admin's reset from another account.

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const PASSWORD = 'correct horse battery'

describe('passkeys and TOTP through the compiled binary', () => {
  test('--help names the passkey options', async () => {
    const help = await runBinary(['serve', '--help'])
    expect(help.stdout).toContain('--webauthn-origins')
  })

  test('a passkey from an allowed site, TOTP, the second step, Basic refused, a reset', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    for (const [email, role] of [
      ['ada@example.com', 'member'],
      ['root@example.com', 'admin'],
    ] as const) {
      const made = await runBinary(
        [
          'users',
          'create',
          '--role',
          role,
          '--name',
          role,
          '--email',
          email,
          '--password-stdin',
          ...data,
        ],
        { stdin: `${PASSWORD}\n` },
      )
      expect(made.code).toBe(0)
    }
    const server = await startBinary([
      ...data,
      '--public-url',
      'https://example.com',
      '--webauthn-origins',
      'https://app.example.com',
    ])
    try {
      const post = async (path: string, json: unknown, headers: Record<string, string> = {}) => {
        const response = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(json),
        })
        return { status: response.status, body: (await response.json()) as Record<string, unknown> }
      }
      const login = (email: string) => post('/login', { email, password: PASSWORD })
      const ada = (await login('ada@example.com')).body.access_token as string
      const bearer = { authorization: `Bearer ${ada}` }

      const authenticator = await SoftAuthenticator.create()
      const site = { origin: 'https://app.example.com', rpId: 'example.com' }
      const options = await post('/auth/passkeys/register/options', {}, bearer)
      expect(options.body.rp).toEqual({ id: 'example.com', name: 'example.com' })
      const registered = await post(
        '/v2/auth/passkeys/register/verify',
        authenticator.register(options.body as never, site),
        bearer,
      )
      expect(registered.status).toBe(201)
      const loginOptions = await post('/v1/auth/passkeys/login/options', {})
      const signedIn = await post(
        '/auth/passkeys/login/verify',
        await authenticator.assert(loginOptions.body as never, site),
      )
      expect(signedIn.status).toBe(200)
      const elsewhere = await post('/auth/passkeys/login/options', {})
      expect(
        (
          await post(
            '/auth/passkeys/login/verify',
            await authenticator.assert(elsewhere.body as never, {
              origin: 'https://evil.example',
              rpId: 'example.com',
            }),
          )
        ).status,
      ).toBe(400)

      const enrolled = await post('/auth/totp/enroll', {}, bearer)
      const app = new OTPAuth.TOTP({
        secret: OTPAuth.Secret.fromBase32(enrolled.body.secret as string),
      })
      const step = Math.floor(Date.now() / 30_000)
      const confirmed = await post(
        '/auth/totp/confirm',
        { code: app.generate({ timestamp: (step - 1) * 30_000 }) },
        bearer,
      )
      expect((confirmed.body.recovery_codes as string[]).length).toBe(10)
      const first = await login('ada@example.com')
      expect(first.body.mfa_required).toBe(true)
      const done = await post('/auth/mfa/verify', {
        mfa_token: first.body.mfa_token,
        code: app.generate({ timestamp: step * 30_000 }),
      })
      expect(done.status).toBe(200)
      const basic = await fetch(`${server.url}/secure`, {
        headers: {
          authorization: `Basic ${Buffer.from(`ada@example.com:${PASSWORD}`).toString('base64')}`,
        },
      })
      expect(basic.status).toBe(401)

      const root = (await login('root@example.com')).body.access_token as string
      const factors = await fetch(`${server.url}/users/1/factors`, {
        headers: { authorization: `Bearer ${root}` },
      })
      expect(await factors.json()).toMatchObject({ totp: true, recovery_codes_left: 10 })
      // The command line's way back for one who lost every factor (the server keeps running).
      const cli = await runBinary(['users', 'reset-factors', 'ada@example.com', ...data])
      expect(cli.code).toBe(0)
      expect(JSON.parse(cli.stdout)).toEqual({
        id: 1,
        factors: { totp: false, passkeys: [], recovery_codes_left: 0 },
      })
      expect((await login('ada@example.com')).body.access_token).toEqual(expect.any(String))
      const unknown = await runBinary(['users', 'reset-factors', 'nobody@example.com', ...data])
      expect(unknown.code).toBe(1)
      const reset = await fetch(`${server.url}/users/1/factors`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${root}` },
      })
      expect(reset.status).toBe(204)
      expect((await login('ada@example.com')).body.access_token).toEqual(expect.any(String))
    } finally {
      await server.stop()
    }
  })
})
