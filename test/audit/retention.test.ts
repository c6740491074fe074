import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { loadConfig } from '../../src/config'
import { purgeExpired } from '../../src/deps'
import { ManualClock } from '../../src/timers'
import { makeTestApp } from '../helpers/app'

const DAY = 24 * 60 * 60 * 1000

const event = (id: string) => ({ action: 'user.deleted', target: { type: 'user', id } })

describe('--audit-retention: audit events are deleted once they are old enough', () => {
  test('events older than the retention go at the next housekeeping, in batches; younger ones stay', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
    await using t = await makeTestApp({ auditRetention: 30 * DAY }, clock)
    for (let n = 0; n < 2500; n++) await t.deps.audit.record(SYSTEM, event(String(n)))
    clock.advance(29 * DAY)
    await t.deps.audit.record(SYSTEM, event('recent'))
    await purgeExpired(t.deps)
    expect((await t.deps.audit.page({}, { limit: 1, before: null })).next).not.toBeNull()
    clock.advance(2 * DAY)
    await purgeExpired(t.deps)
    const left = await t.deps.audit.page({}, { limit: 10, before: null })
    expect(left.data.map((e) => e.target.id)).toEqual(['recent'])
    expect(t.log.lines.some((line) => line.includes('deleted 2500 audit event(s)'))).toBe(true)
  })

  test('the option reads durations; 90 days unless set', () => {
    expect(loadConfig({}, {}).auditRetention).toBe(90 * DAY)
    expect(loadConfig({ 'audit-retention': '365d' }, {}).auditRetention).toBe(365 * DAY)
    expect(loadConfig({}, { ROSTER_AUDIT_RETENTION: '36h' }).auditRetention).toBe(36 * 3600_000)
    expect(() => loadConfig({ 'audit-retention': 'forever' }, {})).toThrow(/--audit-retention/)
  })
})
