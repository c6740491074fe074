import { describe, expect, test } from 'bun:test'
import type { Backend } from '../../src/backends/index'
import type { NewMail } from '../../src/mail/outbox'
import { twoBackends } from '../helpers/stores'

// The mail outbox's contract, on SQLite (npm test) and on PostgreSQL with two instances
// (npm run test:postgres). See test/helpers/stores.ts.

const mail = (n: number, to = `user${n}@example.com`): NewMail => ({
  flow: 'password-reset',
  to,
  subject: `Reset ${n}`,
  text: `text ${n} https://roster.example/auth/password-reset?token=rat_${n}`,
  html: `<p>html ${n}</p>`,
  messageId: `<m${n}@roster.example>`,
  clientIp: '192.0.2.1',
})

/** The lease a worker asks for (it outlasts the work done under it). */
const LEASE_MS = 60_000

const enqueue = (backend: Backend, message: NewMail) =>
  backend.transaction((tx) => tx.mail.enqueue(message))

describe('mail outbox contract (two instances where the backend is shared)', () => {
  test('a message commits with its unit of work, and not without it', async () => {
    await using env = await twoBackends()
    await enqueue(env.a, mail(1))
    const failing = env.a.transaction(async (tx) => {
      await tx.mail.enqueue(mail(2))
      throw new Error('the change failed')
    })
    await expect(failing).rejects.toThrow('the change failed')
    const { data, total } = await env.b.mail.list({ limit: 10, offset: 0 })
    expect(total).toBe(1)
    expect(data).toEqual([
      {
        id: expect.any(Number),
        flow: 'password-reset',
        to: 'user1@example.com',
        subject: 'Reset 1',
        status: 'pending',
        attempts: 0,
        last_error: null,
        created_at: env.clock.date().toISOString(),
        sent_at: null,
        text: mail(1).text,
      },
    ])
  })

  test('claims: due messages, earliest first; on a shared database none goes to two workers', async () => {
    await using env = await twoBackends()
    for (let i = 0; i < 12; i++) {
      await enqueue(env.a, mail(i))
      env.clock.advance(1)
    }
    const [first, second] = await Promise.all([
      env.a.mail.claimDue(6, env.clock.now() + LEASE_MS),
      env.b.mail.claimDue(6, env.clock.now() + LEASE_MS),
    ])
    const subjects = (claimed: typeof first) => claimed.map((message) => message.subject)
    expect(subjects(first)).toEqual(
      subjects(first).toSorted((x, y) => x.localeCompare(y, 'en', { numeric: true })),
    )
    expect(first[0]).toEqual({
      id: expect.any(Number),
      messageId: expect.stringMatching(/^<m\d+@roster\.example>$/),
      to: expect.stringMatching(/@example\.com$/),
      subject: expect.any(String),
      text: expect.any(String),
      html: expect.any(String),
      attempts: 0,
    })
    if (env.a.shared) {
      const both = [...subjects(first), ...subjects(second)]
      expect(new Set(both).size).toBe(12)
    } else {
      // One worker per file: a claim is a read, and a second one sees the same messages.
      expect(subjects(second)).toEqual(subjects(first))
    }
  })

  test('sent: not due again, its bodies cleared (they carry single-use links)', async () => {
    await using env = await twoBackends()
    await enqueue(env.a, mail(1))
    const [claimed] = await env.a.mail.claimDue(10, env.clock.now() + LEASE_MS)
    await env.a.mail.markSent(claimed?.id as number)
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toEqual([])
    expect(await env.b.mail.earliestDue(true)).toBeNull()
    expect(await env.b.mail.get(claimed?.id as number)).toMatchObject({
      status: 'sent',
      attempts: 1,
      sent_at: env.clock.date().toISOString(),
      text: null,
    })
  })

  test('a failed attempt waits for its retry; the last one leaves it failed until a resend', async () => {
    await using env = await twoBackends()
    await enqueue(env.a, mail(1))
    const [claimed] = await env.a.mail.claimDue(10, env.clock.now() + LEASE_MS)
    const id = claimed?.id as number
    const retryAt = env.clock.now() + 2000
    await env.a.mail.markFailed(id, '421 try again later', retryAt)
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toEqual([])
    expect(await env.b.mail.earliestDue(true)).toBe(retryAt)
    expect(await env.b.mail.get(id)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: '421 try again later',
    })
    expect(await env.b.mail.resend(id)).toBe('not-failed')
    env.clock.advance(2000)
    const [again] = await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)
    expect(again).toMatchObject({ id, attempts: 1 })
    await env.b.mail.markFailed(id, '550 no such mailbox', null)
    expect(await env.a.mail.earliestDue(true)).toBeNull()
    expect((await env.a.mail.list({ limit: 10, offset: 0 }, 'failed')).total).toBe(1)
    for (const first of ['oldest', 'newest'] as const) {
      const failed = await env.a.mail.list({ limit: 10, offset: 0, first }, 'failed')
      expect(failed.data.map((message) => message.id)).toEqual([id])
    }
    expect(await env.a.mail.resend(id)).toMatchObject({ id, status: 'pending', attempts: 0 })
    expect(
      (await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).map((message) => message.id),
    ).toEqual([id])
    expect(await env.a.mail.resend(9999)).toBe('missing')
  })

  test('the outbox lists newest first, or oldest first when asked, with or without a status', async () => {
    await using env = await twoBackends()
    for (const n of [1, 2, 3]) await enqueue(env.a, mail(n))
    const subjects = async (first: 'oldest' | 'newest' | undefined, status?: 'pending') =>
      (
        await env.b.mail.list({ limit: 2, offset: 0, ...(first ? { first } : {}) }, status)
      ).data.map((message) => message.subject)
    const [one, two, three] = [mail(1).subject, mail(2).subject, mail(3).subject]
    expect(await subjects(undefined)).toEqual([three, two])
    expect(await subjects('newest')).toEqual([three, two])
    expect(await subjects('oldest')).toEqual([one, two])
    expect(await subjects('oldest', 'pending')).toEqual([one, two])
  })

  test('a claim is held until the lease the worker named, then due again', async () => {
    await using env = await twoBackends()
    await enqueue(env.a, mail(1))
    const [claimed] = await env.a.mail.claimDue(10, env.clock.now() + 5000)
    expect(claimed?.subject).toBe('Reset 1')
    if (!env.a.shared) return
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toEqual([])
    expect(await env.b.mail.earliestDue(true)).toBe(env.clock.now() + 5000)
    // The instance holding it died: another takes it once the lease is over, not before.
    env.clock.advance(4999)
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toEqual([])
    env.clock.advance(1)
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toMatchObject([
      { id: claimed?.id },
    ])
  })

  test('a failure recorded after another worker sent the message leaves it sent', async () => {
    await using env = await twoBackends()
    await enqueue(env.a, mail(1))
    const [claimed] = await env.a.mail.claimDue(10, env.clock.now() + LEASE_MS)
    const id = claimed?.id as number
    await env.b.mail.markSent(id)
    await env.a.mail.markFailed(id, 'timed out', env.clock.now() + 2000)
    expect(await env.b.mail.get(id)).toMatchObject({
      status: 'sent',
      attempts: 1,
      last_error: null,
    })
    expect(await env.b.mail.earliestDue(true)).toBeNull()
  })

  test('a request is one row the same for every address; the worker fulfils or suppresses it, once', async () => {
    await using env = await twoBackends()
    const request = (n: number, to: string) =>
      env.a.transaction((tx) =>
        tx.mail.request({
          flow: 'password-reset',
          to,
          clientIp: '192.0.2.1',
          linkBase: 'https://roster.example',
          messageId: `<r${n}@roster.example>`,
        }),
      )
    await request(1, 'Ada@Example.com')
    env.clock.advance(1000)
    await request(2, 'nobody@example.com')
    // Requested rows are written before they are sent: not due for sending, due for writing.
    expect(await env.b.mail.claimDue(10, env.clock.now() + LEASE_MS)).toEqual([])
    expect(await env.b.mail.earliestDue(false)).toBe(env.clock.now() - 1000)
    const claimed = await env.b.mail.claimRequested(10, env.clock.now() + LEASE_MS)
    expect(claimed).toEqual([
      {
        id: expect.any(Number),
        flow: 'password-reset',
        to: 'Ada@Example.com',
        clientIp: '192.0.2.1',
        linkBase: 'https://roster.example',
        messageId: '<r1@roster.example>',
      },
      expect.objectContaining({ to: 'nobody@example.com' }),
    ])
    if (env.a.shared)
      expect(await env.a.mail.claimRequested(10, env.clock.now() + LEASE_MS)).toEqual([])
    const [ada, nobody] = claimed as unknown as [{ id: number }, { id: number }]
    await env.b.transaction(async (tx) => {
      await tx.mail.fulfil(ada.id, 'ada@example.com', {
        subject: 'Reset',
        text: 'the link',
        html: '<p>the link</p>',
      })
      await tx.mail.suppress(nobody.id, 'no account has this address')
    })
    // A second worker's late write changes nothing: only a requested row is written.
    await env.a.transaction((tx) => tx.mail.suppress(ada.id, 'late'))
    expect(await env.a.mail.claimRequested(10, env.clock.now() + LEASE_MS)).toEqual([])
    expect(await env.a.mail.earliestDue(false)).toBeNull()
    expect(await env.a.mail.claimDue(10, env.clock.now() + LEASE_MS)).toMatchObject([
      {
        id: ada.id,
        to: 'ada@example.com',
        subject: 'Reset',
        text: 'the link',
        messageId: '<r1@roster.example>',
      },
    ])
    expect((await env.b.mail.list({ limit: 10, offset: 0 }, 'suppressed')).data).toMatchObject([
      {
        id: nobody.id,
        status: 'suppressed',
        last_error: 'no account has this address',
        text: null,
      },
    ])
    // The limits count both, by address (without regard to case) and by client.
    const since = new Date(env.clock.now() - 60_000).toISOString()
    const count = (counter: { toKey: string } | { clientIp: string }) =>
      env.b.transaction((tx) => tx.mail.countSince(counter, since))
    expect(await count({ toKey: 'ada@example.com' })).toEqual({
      count: 1,
      oldest: new Date(env.clock.now() - 1000).toISOString(),
    })
    expect(await count({ clientIp: '192.0.2.1' })).toMatchObject({ count: 2 })
    expect(await count({ clientIp: '192.0.2.2' })).toEqual({ count: 0, oldest: null })
    const later = new Date(env.clock.now() + 1).toISOString()
    expect(
      await env.b.transaction((tx) => tx.mail.countSince({ toKey: 'ada@example.com' }, later)),
    ).toEqual({ count: 0, oldest: null })
  })
})
