import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'
import { startSmtpServer } from '../helpers/smtp'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const PASSWORD = 'correct horse battery'
const NEW_PASSWORD = 'a brand new passphrase'

async function call(url: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${url}${path}`, init)
  const text = await response.text()
  const json = response.headers.get('content-type')?.startsWith('application/json') ?? false
  return {
    status: response.status,
    headers: response.headers,
    body: json ? JSON.parse(text) : text,
  }
}

const postJson = (url: string, path: string, body: unknown) =>
  call(url, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

/** A port nothing listens on now, so --public-url can name it before the server starts. */
function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/** The outbox as `roster mail list --json` shows it, once the server has written every request. */
async function writtenOutbox(
  data: string[],
): Promise<{ status: string; text: string | null; flow: string }[]> {
  for (let tries = 0; tries < 100; tries++) {
    const listed = await runBinary(['mail', 'list', '--json', ...data])
    const rows = JSON.parse(listed.stdout) as {
      status: string
      text: string | null
      flow: string
    }[]
    if (rows.every((row) => row.status !== 'requested')) return rows
    await Bun.sleep(20)
  }
  throw new Error('the server did not write the requested mail')
}

async function createUser(data: string[]) {
  const made = await runBinary(
    ['users', 'create', '--name', 'Ada', '--email', 'ada@example.com', '--password-stdin', ...data],
    { stdin: `${PASSWORD}\n` },
  )
  expect(made.code).toBe(0)
}

describe('mail through the compiled binary', () => {
  test('a password reset by a real SMTP server: the link’s page, the new password, the old sessions gone', async () => {
    using dir = tempDir()
    await using smtp = await startSmtpServer({ auth: { user: 'roster', pass: 's3cret' } })
    const data = ['--data-dir', dir.path]
    await createUser(data)
    const port = freePort()
    const publicUrl = `http://127.0.0.1:${port}`
    const server = await startBinary(
      [
        ...data,
        '--smtp-url',
        smtp.url,
        '--public-url',
        publicUrl,
        '--mail-from',
        'Roster <roster@example.com>',
      ],
      { port },
    )
    try {
      const login = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=ada@example.com&password=${encodeURIComponent(PASSWORD)}`,
      })
      expect(login.status).toBe(200)
      const asked = await postJson(server.url, '/auth/password-reset/request', {
        email: 'ada@example.com',
      })
      expect(asked.status).toBe(202)
      const [mail] = await smtp.waitFor(1)
      expect(mail).toMatchObject({
        to: 'ada@example.com',
        from: 'roster@example.com',
        subject: 'Reset your password',
      })
      const link = new URL(mail?.link as string)
      expect(link.origin).toBe(publicUrl)
      const page = await call(server.url, `${link.pathname}${link.search}`)
      expect(page.status).toBe(200)
      expect(page.body).toContain('Choose a new password')
      const token = link.searchParams.get('token')
      const confirmed = await postJson(server.url, `${link.pathname}/confirm`, {
        token,
        password: NEW_PASSWORD,
      })
      expect(confirmed.status).toBe(200)
      expect(confirmed.body.email_verified_at).not.toBeNull()
      const old = await call(server.url, '/me', {
        headers: { authorization: `Bearer ${login.body.access_token}` },
      })
      expect(old.status).toBe(401)
      const fresh = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=ada@example.com&password=${encodeURIComponent(NEW_PASSWORD)}`,
      })
      expect(fresh.status).toBe(200)
    } finally {
      await server.stop()
    }
    const listed = await runBinary(['mail', 'list', ...data])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/password-reset\s+ada@example\.com\s+sent\s+1/)
  })

  test('a magic link and code, an email change and an invitation, each followed from the message', async () => {
    using dir = tempDir()
    await using smtp = await startSmtpServer()
    const data = ['--data-dir', dir.path]
    await createUser(data)
    const key = (await runBinary(['keys', 'create', '--name', 'admin', ...data])).stdout.trim()
    const port = freePort()
    const server = await startBinary(
      [...data, '--smtp-url', smtp.url, '--public-url', `http://127.0.0.1:${port}`],
      {
        port,
      },
    )
    try {
      // A magic link's code signs in like /login.
      expect(
        (await postJson(server.url, '/auth/magic-link/request', { email: 'ada@example.com' }))
          .status,
      ).toBe(202)
      const [magic] = await smtp.waitFor(1)
      const code = /\b(\d{6})\b/.exec(magic?.text ?? '')?.[1]
      const signedIn = await postJson(server.url, '/v2/auth/magic-link/confirm', {
        email: 'ada@example.com',
        code,
      })
      expect(signedIn.status).toBe(200)
      const bearer = { authorization: `Bearer ${signedIn.body.access_token}` }
      // The signed-in user moves to a new address (its password as the step-up): a link
      // there, a notice to the old one.
      const asked = await call(server.url, '/auth/email-change/request', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer },
        body: JSON.stringify({ new_email: 'ada@new.example', current_password: PASSWORD }),
      })
      expect(asked.status).toBe(202)
      const afterChange = await smtp.waitFor(3)
      const toNew = afterChange.find((mail) => mail.to === 'ada@new.example')
      expect(
        afterChange.some(
          (mail) =>
            mail.to === 'ada@example.com' && mail.subject === 'Your email address is changing',
        ),
      ).toBe(true)
      const moved = await postJson(server.url, '/auth/email-change/confirm', {
        token: new URL(toNew?.link as string).searchParams.get('token'),
      })
      expect(moved.body).toMatchObject({
        email: 'ada@new.example',
        email_verified_at: expect.any(String),
      })
      // An admin's key invites a user made without a password; it sets one from the message.
      const made = await call(server.url, '/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ name: 'Cy', email: 'cy@example.com' }),
      })
      const invited = await call(server.url, `/users/${made.body.id}/invite`, {
        method: 'POST',
        headers: { 'x-api-key': key },
      })
      expect(invited.status).toBe(202)
      // The fifth message: the old address was also told of the change, with its undo link.
      const invitation = (await smtp.waitFor(5)).find((mail) => mail.to === 'cy@example.com')
      const accepted = await postJson(server.url, '/auth/invitation/confirm', {
        token: new URL(invitation?.link as string).searchParams.get('token'),
        password: NEW_PASSWORD,
      })
      expect(accepted.status).toBe(200)
      const login = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=cy@example.com&password=${encodeURIComponent(NEW_PASSWORD)}`,
      })
      expect(login.status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  test('an email change and its undo, each followed from the message: the step-up, the notice to the old address, the sign-out', async () => {
    using dir = tempDir()
    await using smtp = await startSmtpServer()
    const data = ['--data-dir', dir.path]
    await createUser(data)
    const port = freePort()
    const publicUrl = `http://127.0.0.1:${port}`
    const server = await startBinary([...data, '--smtp-url', smtp.url, '--public-url', publicUrl], {
      port,
    })
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
    const askChange = (token: string, body: object) =>
      call(server.url, '/auth/email-change/request', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(token) },
        body: JSON.stringify(body),
      })
    /** Opens a link from a message as a browser would (the page), then presses its button. */
    const follow = async (link: string | null | undefined) => {
      const url = new URL(link as string)
      expect(url.origin).toBe(publicUrl)
      const page = await call(server.url, `${url.pathname}${url.search}`)
      expect(page.status).toBe(200)
      return await postJson(server.url, `${url.pathname}/confirm`, {
        token: url.searchParams.get('token'),
      })
    }
    try {
      const login = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=ada@example.com&password=${encodeURIComponent(PASSWORD)}`,
      })
      const token = login.body.access_token as string
      // The token alone moves nothing, even just after signing in: the password is asked for.
      const bare = await askChange(token, { new_email: 'ada@new.example' })
      expect(bare.status).toBe(403)
      expect(bare.body.error.code).toBe('REAUTHENTICATION_REQUIRED')
      const asked = await askChange(token, {
        new_email: 'ada@new.example',
        current_password: PASSWORD,
      })
      expect(asked.status).toBe(202)
      const toNew = (await smtp.waitFor(2)).find((mail) => mail.to === 'ada@new.example')
      const moved = await follow(toNew?.link)
      expect(moved.body.email).toBe('ada@new.example')

      const notice = (await smtp.waitFor(3)).find(
        (mail) =>
          mail.to === 'ada@example.com' && mail.subject === 'Your email address was changed',
      )
      expect(notice?.text).toContain('ada@new.example')
      expect(notice?.html).toContain(`href="${notice?.link}"`)
      const undone = await follow(notice?.link)
      expect(undone.status).toBe(200)
      expect(undone.body).toMatchObject({
        email: 'ada@example.com',
        email_verified_at: expect.any(String),
      })
      expect((await call(server.url, '/me', { headers: bearer(token) })).status).toBe(401)
      const again = await follow(notice?.link)
      expect({ status: again.status, code: again.body.error.code }).toEqual({
        status: 400,
        code: 'TOKEN_USED',
      })
      const back = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=ada@example.com&password=${encodeURIComponent(PASSWORD)}`,
      })
      expect(back.status).toBe(200)
    } finally {
      await server.stop()
    }
    const listed = await runBinary(['mail', 'list', ...data])
    expect(listed.stdout).toMatch(/email-change-undo\s+ada@example\.com\s+sent\s+1/)
  })

  test('without --smtp-url mail waits in the outbox; roster mail list shows the link to follow', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    await createUser(data)
    const server = await startBinary(data)
    try {
      expect(
        (await postJson(server.url, '/auth/verify-email/request', { email: 'ada@example.com' }))
          .status,
      ).toBe(202)
      const listed = await runBinary(['mail', 'list', ...data])
      expect(listed.code).toBe(0)
      const link = /http:\/\/\S+\/auth\/verify-email\?token=rat_\S+/.exec(
        listed.stdout,
      )?.[0] as string
      expect(link).toStartWith(server.url)
      const token = new URL(link).searchParams.get('token')
      const confirmed = await postJson(server.url, '/auth/verify-email/confirm', { token })
      expect(confirmed.status).toBe(200)
      expect(confirmed.body.email_verified_at).toMatch(/Z$/)
      const json = await runBinary(['mail', 'list', '--json', '--status', 'pending', ...data])
      expect(JSON.parse(json.stdout)).toMatchObject([{ flow: 'verify-email', status: 'pending' }])
    } finally {
      await server.stop()
    }
  })

  test('--require-verified-email refuses sign-in with EMAIL_NOT_VERIFIED until the link is followed', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    await createUser(data)
    const server = await startBinary([...data, '--require-verified-email'])
    const signIn = () =>
      call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `email=ada@example.com&password=${encodeURIComponent(PASSWORD)}`,
      })
    try {
      const refused = await signIn()
      expect(refused.status).toBe(403)
      expect(refused.body.error.code).toBe('EMAIL_NOT_VERIFIED')
      const wrong = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=ada@example.com&password=wrong-password',
      })
      expect(wrong.body.error.code).toBe('INVALID_CREDENTIALS')
      await postJson(server.url, '/auth/verify-email/request', { email: 'ada@example.com' })
      const text = (await writtenOutbox(data))[0]?.text as string
      const token = /token=(rat_[A-Za-z0-9_-]+)/.exec(text)?.[1]
      expect((await postJson(server.url, '/auth/verify-email/confirm', { token })).status).toBe(200)
      expect((await signIn()).status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  test('--smtp-url without --public-url, or a malformed one, stops the start with one line', async () => {
    using dir = tempDir()
    const missing = await runBinary([
      'serve',
      '--data-dir',
      dir.path,
      '--smtp-url',
      'smtp://127.0.0.1:2525',
    ])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr.trim().split('\n')).toHaveLength(1)
    expect(missing.stderr).toContain('--smtp-url needs --public-url')
    const malformed = await runBinary([
      'serve',
      '--data-dir',
      dir.path,
      '--smtp-url',
      'http://user:hunter2@mail.example',
    ])
    expect(malformed.stderr).toContain('invalid value for --smtp-url')
    expect(malformed.stderr).not.toContain('hunter2')
  })
})
