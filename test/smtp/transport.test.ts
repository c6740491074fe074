import { describe, expect, test } from 'bun:test'
import { createSmtpTransport, PermanentMailError } from '../../src/smtp/transport'
import { startHangingFront, startSmtpServer } from '../helpers/smtp'

// The SMTP transport against real servers that hang: a send ends within its limit however the
// server behaves (the outbox's lease is measured from that limit), with an error worth retrying.

const envelope = {
  from: 'roster <no-reply@roster.example>',
  to: 'ada@example.com',
  subject: 'Reset',
  text: 'the link',
  html: '<p>the link</p>',
  messageId: '<m1@roster.example>',
}

/** How long `send` took, and what it threw. */
async function timedSend(url: string, limitMs: number) {
  const transport = createSmtpTransport(url, limitMs)
  const started = performance.now()
  const error = await transport.send(envelope).then(
    () => null,
    (thrown: unknown) => thrown as Error,
  )
  transport.close()
  return { ms: performance.now() - started, error }
}

describe('the SMTP transport', () => {
  test('a server that accepts the connection and never greets: the send ends at the limit, to be retried', async () => {
    await using smtp = await startSmtpServer()
    await using front = await startHangingFront(smtp)
    const { ms, error } = await timedSend(front.url, 1000)
    expect(front.held).toBe(1)
    expect(error).toBeInstanceOf(Error)
    expect(error).not.toBeInstanceOf(PermanentMailError)
    expect(ms).toBeGreaterThanOrEqual(950)
    expect(ms).toBeLessThan(1500)
  })

  test('a server slow at every step, each within its own timeout: the send is still cut at the limit, and nothing arrives', async () => {
    await using smtp = await startSmtpServer()
    await using front = await startHangingFront(smtp)
    // Greeted after 0.7 s; then the message is taken and never answered (an idle socket
    // would be given up only 1 s later, at 1.7 s).
    front.slow(700)
    smtp.stallNext()
    const { ms, error } = await timedSend(front.url, 1000)
    expect(error?.message).toBe('the mail server did not take the message within 1 s')
    expect(ms).toBeLessThan(1500)
    expect(smtp.received).toEqual([])
  })

  test('a server that answers in time takes the message', async () => {
    await using smtp = await startSmtpServer()
    await using front = await startHangingFront(smtp)
    front.slow(100)
    const { error } = await timedSend(front.url, 1000)
    expect(error).toBeNull()
    expect((await smtp.waitFor(1))[0]?.messageId).toBe(envelope.messageId)
  })
})
