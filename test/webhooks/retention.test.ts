import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { purgeExpired } from '../../src/deps'
import { ManualClock } from '../../src/timers'
import { makeTestApp } from '../helpers/app'

const DAY = 24 * 60 * 60 * 1000

const event = (id: string) => ({
  eventId: id,
  scheme: 'stripe' as const,
  type: 'invoice.paid',
  payload: JSON.stringify({ type: 'invoice.paid', data: { object: {} } }),
  bodySha256: null,
})

describe('--webhook-retention: inbound events are deleted once they are old enough', () => {
  test('handled events older than the retention go at the next housekeeping; younger ones stay', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
    await using t = await makeTestApp({ webhookRetention: 90 * DAY }, clock)
    for (const id of ['evt_1', 'evt_2', 'evt_3']) await t.deps.webhooks.inbox.record(event(id))
    t.deps.webhooks.worker.wake()
    await t.deps.webhooks.worker.settled()
    clock.advance(89 * DAY)
    await t.deps.webhooks.inbox.record(event('evt_recent'))
    t.deps.webhooks.worker.wake()
    await t.deps.webhooks.worker.settled()
    await purgeExpired(t.deps)
    expect(await t.deps.webhooks.inbox.count()).toBe(4)
    clock.advance(2 * DAY)
    await purgeExpired(t.deps)
    const left = await t.deps.webhooks.inbox.list({ limit: 10, offset: 0 })
    expect(left.data.map((e) => e.id)).toEqual(['evt_recent'])
    expect(t.log.lines.some((line) => line.includes('deleted 3 webhook event(s)'))).toBe(true)
  })

  test('an event still waiting for an attempt is kept, however old', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
    await using t = await makeTestApp({ webhookRetention: DAY }, clock)
    await t.deps.webhooks.worker.stop()
    await t.deps.webhooks.inbox.record(event('evt_waiting'))
    clock.advance(10 * DAY)
    await purgeExpired(t.deps)
    expect(await t.deps.webhooks.inbox.waiting()).toBe(1)
  })

  test('the option reads durations', () => {
    expect(loadConfig({ 'webhook-retention': '36h' }, {}).webhookRetention).toBe(36 * 3600_000)
    expect(loadConfig({}, { ROSTER_WEBHOOK_RETENTION: '7d' }).webhookRetention).toBe(7 * DAY)
    expect(() => loadConfig({ 'webhook-retention': '90' }, {})).toThrow(/--webhook-retention/)
  })
})
