import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { ManualClock } from '../../src/timers'
import { expectEnvelope, makeTestApp } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { startSmtpServer } from '../helpers/smtp'

// The mail worker against a real SMTP server that refuses, fails and goes away; the clock is
// moved instead of waiting out the backoff (2 s, 4 s, 8 s …).

async function withMail() {
  const smtp = await startSmtpServer()
  const clock = new ManualClock(Date.parse('2026-11-24T12:00:00.000Z'))
  const t = await makeTestApp({ smtpUrl: smtp.url, publicUrl: 'https://roster.example' }, clock)
  await t.deps.users.create({ name: 'Ada', email: 'ada@example.com', passwordHash: null }, SYSTEM)
  const disposeApp = t[Symbol.asyncDispose]
  return Object.assign(t, {
    smtp,
    clock,
    worker: t.deps.mail.worker as NonNullable<typeof t.deps.mail.worker>,
    ask: () => t.post('/auth/password-reset/request', { email: 'ada@example.com' }),
    outbox: async () => (await t.deps.mail.outbox.list({ limit: 10, offset: 0 })).data,
    async [Symbol.asyncDispose]() {
      await disposeApp()
      await smtp[Symbol.asyncDispose]()
    },
  })
}

describe('the mail worker', () => {
  test('a 4xx answer is retried after the backoff, and the message arrives once', async () => {
    await using t = await withMail()
    t.smtp.refuseNext(451, 'mailbox busy, try later')
    expect((await t.ask()).status).toBe(202)
    await t.worker.settled()
    expect(t.smtp.received).toHaveLength(0)
    expect(await t.outbox()).toMatchObject([
      { status: 'pending', attempts: 1, last_error: expect.stringContaining('451') },
    ])
    t.clock.advance(2000)
    await t.smtp.waitFor(1)
    await t.worker.settled()
    expect(await t.outbox()).toMatchObject([{ status: 'sent', attempts: 2, last_error: null }])
    t.clock.advance(60 * 60 * 1000)
    await t.worker.settled()
    expect(t.smtp.received).toHaveLength(1)
  })

  test('a 5xx answer fails the message at once; a resend delivers it with the same Message-ID', async () => {
    await using t = await withMail()
    const key = await apiKey(t)
    t.smtp.refuseNext(550, 'no such mailbox')
    await t.ask()
    await t.worker.settled()
    const [failed] = await t.outbox()
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: expect.stringContaining('550'),
    })
    const resent = await t.call('POST', `/mail/${failed?.id}/resend`, {
      headers: { 'x-api-key': key },
    })
    expect(resent.status).toBe(202)
    expect(resent.body).toMatchObject({ status: 'pending', attempts: 0 })
    const [mail] = await t.smtp.waitFor(1)
    await t.worker.settled()
    expect(await t.outbox()).toMatchObject([{ status: 'sent', attempts: 1 }])
    expectEnvelope(
      await t.call('POST', `/mail/${failed?.id}/resend`, { headers: { 'x-api-key': key } }),
      409,
      'CONFLICT',
    )
    expect(mail?.messageId).toMatch(/@roster\.example>$/)
  })

  test('with the mail server down, mail waits; once it is back the message goes, exactly once', async () => {
    await using t = await withMail()
    await t.smtp.down()
    await t.ask()
    await t.worker.settled()
    t.clock.advance(2000)
    await t.worker.settled()
    expect(await t.outbox()).toMatchObject([{ status: 'pending', attempts: 2 }])
    await t.smtp.up()
    t.clock.advance(4000)
    await t.smtp.waitFor(1)
    await t.worker.settled()
    t.clock.advance(60 * 60 * 1000)
    await t.worker.settled()
    expect(t.smtp.received).toHaveLength(1)
    expect(await t.outbox()).toMatchObject([{ status: 'sent', attempts: 3 }])
  })

  test('after the last attempt the message stays failed, with the last error', async () => {
    await using t = await withMail()
    t.worker.retry = { baseMs: 1000, capMs: 1000, maxAttempts: 3 }
    t.smtp.refuseNext(421, 'service not available', 3)
    await t.ask()
    for (let attempt = 0; attempt < 3; attempt++) {
      await t.worker.settled()
      t.clock.advance(1000)
    }
    await t.worker.settled()
    expect(await t.outbox()).toMatchObject([
      { status: 'failed', attempts: 3, last_error: expect.stringContaining('421') },
    ])
    expect(t.smtp.received).toHaveLength(0)
  })
})
