import { describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/timers'
import { makeTestApp } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { startReceiver, verifyDelivery } from '../helpers/receiver'

/** Waits (in real time) until `check` holds; the sender's attempts are real HTTP requests. */
async function eventually(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('did not happen in time')
    await Bun.sleep(10)
  }
}

describe('the webhook sender', () => {
  test('retries 5 s, 10 s, 20 s … until the window has passed since the first attempt; then the delivery fails and its endpoint is disabled', async () => {
    await using receiver = await startReceiver('fail')
    const clock = new ManualClock(Date.now())
    await using t = await makeTestApp(
      { webhookAllowPrivate: true, webhookRetryWindow: 60_000 },
      clock,
    )
    const headers = { 'x-api-key': await apiKey(t) }
    const made = await t.post(
      '/webhook-endpoints',
      { url: receiver.url, events: ['user.*'] },
      { headers },
    )
    const id = made.body.id
    await t.post('/users', { name: 'One', email: 'one@example.com' }, { headers })
    await t.post('/users', { name: 'Two', email: 'two@example.com' }, { headers })
    await eventually(() => receiver.received.length === 1)
    const started = clock.now()
    for (const [wait, attempts] of [
      [4_999, 1],
      [1, 2],
      [10_000, 3],
      [20_000, 4],
    ] as const) {
      clock.advance(wait)
      await eventually(() => receiver.received.length === attempts)
    }
    // The next would come at 35 s + 40 s, past the 60 s window: it gave up at the fourth.
    await eventually(
      async () => (await t.get(`/webhook-endpoints/${id}`, { headers })).body.status === 'disabled',
    )
    expect(clock.now() - started).toBe(35_000)
    expect(new Set(receiver.received.map((entry) => entry.headers['webhook-id'])).size).toBe(1)
    for (const entry of receiver.received)
      verifyDelivery(entry, made.body.secret, new Date(clock.now()))
    const endpoint = await t.get(`/webhook-endpoints/${id}`, { headers })
    expect(endpoint.body.disabled_reason).toMatch(
      /^Every attempt to deliver evt_\d+ failed for 35 seconds \(last: HTTP 500\)$/,
    )
    const log = (await t.get(`/webhook-endpoints/${id}/deliveries`, { headers })).body.data
    expect(
      log.map((delivery: { status: string; attempts: number }) => [
        delivery.status,
        delivery.attempts,
      ]),
    ).toEqual([
      ['pending', 0],
      ['failed', 4],
    ])
    const disabled = await t.get('/audit?action=webhook_endpoint.disabled', { headers })
    expect(disabled.body.data[0]).toMatchObject({
      actor: { type: 'system', id: null },
      target: { type: 'webhook_endpoint', id: String(id) },
      changes: {
        status: { before: 'enabled', after: 'disabled' },
        disabled_reason: { before: null, after: endpoint.body.disabled_reason },
      },
    })
    // Enabled again: what was queued goes, oldest first; the failed one only when retried.
    receiver.mode = 'ok'
    await t.call('PATCH', `/webhook-endpoints/${id}`, { json: { status: 'enabled' }, headers })
    await receiver.until(1)
    expect(receiver.answered[0]?.payload.data.target).toEqual({ type: 'user', id: '2' })
    const failed = log[1]
    const retried = await t.post(
      `/webhook-endpoints/${id}/deliveries/${failed.id}/retry`,
      {},
      { headers },
    )
    expect(retried.body).toMatchObject({ status: 'pending', attempts: 0, last_error: 'HTTP 500' })
    await receiver.until(2)
    expect(receiver.answered[1]?.payload.data.target).toEqual({ type: 'user', id: '1' })
    const retriedEvent = await t.get('/audit?action=webhook_delivery.retried', { headers })
    expect(retriedEvent.body.data[0]).toMatchObject({
      actor: { type: 'api_key' },
      target: { type: 'webhook_delivery', id: String(failed.id) },
    })
  })

  test('endpoints are served side by side: one that hangs does not hold up another', async () => {
    await using slow = await startReceiver('hang')
    await using fast = await startReceiver()
    await using t = await makeTestApp({ webhookAllowPrivate: true })
    t.deps.outbound.sender.policy = { ...t.deps.outbound.sender.policy, timeoutMs: 2000 }
    const headers = { 'x-api-key': await apiKey(t) }
    for (const url of [slow.url, fast.url]) {
      await t.post('/webhook-endpoints', { url, events: ['user.created'] }, { headers })
    }
    for (let n = 1; n <= 5; n++) {
      await t.post('/users', { name: `U${n}`, email: `u${n}@example.com` }, { headers })
    }
    const started = Date.now()
    await fast.until(5)
    expect(Date.now() - started).toBeLessThan(1500)
    expect(slow.received).toHaveLength(1)
  })
})
