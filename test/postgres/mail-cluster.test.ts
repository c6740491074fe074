import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { runBinary } from '../helpers/binary'
import { type Cluster, startCluster, until } from '../helpers/cluster'
import { startHangingFront, startSmtpServer } from '../helpers/smtp'

// The mail flows on two instances of the compiled binary sharing PostgreSQL, with a real SMTP
// server: a link asked for on one instance works on the other, the limits and a code's tries
// count across both, mail an instance dies holding goes out from the other, once, and a mail
// server that hangs or greets late gets every message once.

setDefaultTimeout(60_000)

const PUBLIC_URL = 'https://id.example.com'

async function post(
  base: string,
  path: string,
  json: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(json),
  })
  const text = await response.text()
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? null : JSON.parse(text),
  }
}

/** Two instances sending to `smtpUrl` (else to the real SMTP server itself). */
async function withMailCluster(options: { smtpUrl?: string; flags?: string[] } = {}) {
  const smtp = await startSmtpServer()
  const cluster = await startCluster({
    flags: [
      '--smtp-url',
      options.smtpUrl ?? smtp.url,
      '--public-url',
      PUBLIC_URL,
      ...(options.flags ?? []),
    ],
  })
  const [a, b] = cluster.instances.map((instance) => instance.url) as [string, string]
  const made = await post(cluster.url, '/users', { name: 'Ada', email: 'ada@example.com' })
  expect(made.status).toBe(201)
  return {
    smtp,
    cluster,
    a,
    b,
    async [Symbol.asyncDispose]() {
      await cluster[Symbol.asyncDispose]()
      await smtp[Symbol.asyncDispose]()
    },
  }
}

const tokenOf = (link: string | null) => new URL(link as string).searchParams.get('token') as string
const codeOf = (text: string | undefined) => /\b(\d{6})\b/.exec(text ?? '')?.[1] as string

describe('mail on two instances sharing PostgreSQL', () => {
  test('a reset asked on one instance arrives once and is confirmed on the other', async () => {
    await using env = await withMailCluster()
    expect(
      (await post(env.a, '/auth/password-reset/request', { email: 'ada@example.com' })).status,
    ).toBe(202)
    const [mail] = await env.smtp.waitFor(1)
    expect(mail?.link).toStartWith(`${PUBLIC_URL}/auth/password-reset?token=rat_`)
    const token = tokenOf(mail?.link ?? null)
    const confirmed = await post(env.b, '/auth/password-reset/confirm', {
      token,
      password: 'a new passphrase',
    })
    expect(confirmed.status).toBe(200)
    const again = await post(env.a, '/auth/password-reset/confirm', {
      token,
      password: 'another one',
    })
    expect(again.body.error.code).toBe('TOKEN_USED')
    await Bun.sleep(2500)
    expect(env.smtp.received).toHaveLength(1)
  })

  test('the per-address limit and a code’s tries count across both instances', async () => {
    await using env = await withMailCluster()
    const ask = (base: string) =>
      post(base, '/auth/magic-link/request', { email: 'ada@example.com' })
    const statuses = []
    for (let i = 0; i < 5; i++) statuses.push((await ask(i % 2 === 0 ? env.a : env.b)).status)
    expect(statuses).toEqual([202, 202, 202, 202, 202])
    const refused = await ask(env.b)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const received = await env.smtp.waitFor(5)
    const code = codeOf(received.at(-1)?.text)
    const wrong = code === '000000' ? '000001' : '000000'
    for (let i = 0; i < 5; i++) {
      const tried = await post(i % 2 === 0 ? env.a : env.b, '/auth/magic-link/confirm', {
        email: 'ada@example.com',
        code: wrong,
      })
      expect(tried.body.error.code).toBe('TOKEN_INVALID')
    }
    const late = await post(env.a, '/auth/magic-link/confirm', { email: 'ada@example.com', code })
    expect(late.body.error.code).toBe('TOKEN_EXPIRED')
  })

  test('an email change and an invitation asked on one instance are confirmed on the other, and so is the change’s undo; a verification too', async () => {
    await using env = await withMailCluster()
    const made = await post(env.a, '/users', {
      name: 'Bo',
      email: 'bo@example.com',
      password: 'bo passphrase',
    })
    const login = await fetch(`${env.b}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=bo@example.com&password=bo+passphrase',
    })
    const bearer = {
      authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}`,
    }
    expect(
      (
        await post(
          env.a,
          '/auth/email-change/request',
          { new_email: 'bo@new.example', current_password: 'bo passphrase' },
          bearer,
        )
      ).status,
    ).toBe(202)
    const toNew = (await env.smtp.waitFor(2)).find((mail) => mail.to === 'bo@new.example')
    const moved = await post(env.b, '/auth/email-change/confirm', {
      token: tokenOf(toNew?.link ?? null),
    })
    expect(moved.body).toMatchObject({
      id: made.body.id,
      email: 'bo@new.example',
      email_verified_at: expect.any(String),
    })
    const notice = (await env.smtp.waitFor(3)).find(
      (mail) => mail.to === 'bo@example.com' && mail.subject === 'Your email address was changed',
    )
    expect(notice?.link).toContain('/auth/email-change-undo?token=rat_')
    const keyMade = await runBinary(
      ['keys', 'create', '--name', 'admin', ...env.cluster.cliFlags],
      {
        env: env.cluster.env,
      },
    )
    const key = keyMade.stdout.trim()
    expect((await post(env.b, '/users/1/invite', {}, { 'x-api-key': key })).status).toBe(202)
    const invitation = (await env.smtp.waitFor(4)).find((mail) => mail.to === 'ada@example.com')
    const accepted = await post(env.a, '/auth/invitation/confirm', {
      token: tokenOf(invitation?.link ?? null),
      password: 'ada passphrase',
    })
    expect(accepted.body).toMatchObject({ id: 1, email_verified_at: expect.any(String) })
    expect(
      (await post(env.b, '/auth/verify-email/request', { email: 'bo@new.example' })).status,
    ).toBe(202)
    await Bun.sleep(2500)
    // Verified already by the email change: no fifth message.
    expect(env.smtp.received).toHaveLength(4)
    // The old address's link, mailed by instance b, undoes the change on instance a.
    const undone = await post(env.a, '/auth/email-change-undo/confirm', {
      token: tokenOf(notice?.link ?? null),
    })
    expect(undone.body).toMatchObject({ id: made.body.id, email: 'bo@example.com' })
    expect((await fetch(`${env.b}/me`, { headers: bearer })).status).toBe(401)
  })

  test('an instance killed while it holds a message: the other sends it once the lease lapses', async () => {
    await using env = await withMailCluster()
    const cluster: Cluster = env.cluster
    await cluster.kill(1)
    env.smtp.stallNext()
    expect(
      (await post(env.a, '/auth/password-reset/request', { email: 'ada@example.com' })).status,
    ).toBe(202)
    // Instance a has claimed the message and is stuck sending it; it dies.
    await until(() => env.smtp.stalled === 1)
    await cluster.kill(0)
    await cluster.restart(1)
    const [mail] = await env.smtp.waitFor(1, 80_000)
    expect(mail?.to).toBe('ada@example.com')
    await Bun.sleep(2500)
    expect(env.smtp.received).toHaveLength(1)
  }, 100_000)

  test('a mail server that accepts connections and hangs, then greets late: each message arrives exactly once', async () => {
    await using smtp = await startSmtpServer()
    await using front = await startHangingFront(smtp)
    // A send may take 1 s (a lease of 2 s): a batch of messages held at once would lapse.
    await using env = await withMailCluster({ smtpUrl: front.url, flags: ['--smtp-timeout', '1s'] })
    const count = 24
    for (let n = 0; n < count; n++) {
      const email = `user${n}@example.com`
      expect((await post(env.cluster.url, '/users', { name: `User ${n}`, email })).status).toBe(201)
      // Each from its own client (the proxy is trusted), under the per-client limit.
      const asked = await post(
        n % 2 === 0 ? env.a : env.b,
        '/auth/password-reset/request',
        { email },
        { 'x-forwarded-for': `198.51.100.${n}` },
      )
      expect(asked.status).toBe(202)
    }
    // Both instances' workers try messages against a server that never greets, then against
    // one that greets after 0.7 s of each 1 s a send may take.
    await until(() => front.held >= 4, 20_000)
    front.slow(700)
    const deliveries = () => {
      const perMessageId = new Map<string, number>()
      for (const mail of smtp.received) {
        perMessageId.set(mail.messageId, (perMessageId.get(mail.messageId) ?? 0) + 1)
      }
      return perMessageId
    }
    await until(() => deliveries().size === count, 90_000)
    // Long enough for any lease still held to lapse and its message to be sent a second time.
    await Bun.sleep(5000)
    const sentTwice = [...deliveries()].filter(([, times]) => times > 1)
    expect(sentTwice).toEqual([])
    expect(smtp.received).toHaveLength(count)
    expect(new Set(smtp.received.map((mail) => mail.to)).size).toBe(count)
  }, 150_000)
})
