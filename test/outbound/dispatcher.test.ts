import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { createAuditLog } from '../../src/audit/log'
import { memoryLogger } from '../../src/log'
import { Dispatcher } from '../../src/outbound/dispatcher'
import type { OutboundRows } from '../../src/outbound/store'
import { systemTimers } from '../../src/timers'
import { twoBackends } from '../helpers/stores'

describe('the webhook dispatcher', () => {
  test('with no enabled endpoint it reads nothing, however many events are written', async () => {
    await using env = await twoBackends()
    const log = createAuditLog(env.a.audit, () => new Date())
    let reads = 0
    const rows: OutboundRows = {
      ...env.a.outbound,
      activeEndpoints: () => {
        reads += 1
        return env.a.outbound.activeEndpoints()
      },
    }
    let queued = 0
    const dispatcher = new Dispatcher(rows, log.feed, systemTimers, memoryLogger(), () => {
      queued += 1
    })
    await dispatcher.start()
    await dispatcher.settled()
    expect(reads).toBe(1)
    for (let n = 0; n < 50; n++) {
      await log.record(SYSTEM, { action: 'user.created', target: { type: 'user', id: String(n) } })
    }
    await dispatcher.settled()
    // On SQLite (one process per file) not once; on PostgreSQL at most the 2 s poll.
    expect(reads).toBeLessThanOrEqual(env.a === env.b ? 1 : 2)
    // An endpoint is made: the dispatcher reads again, and queues what comes after it.
    await env.a.outbound.insert(
      {
        url: 'https://hooks.example.com/in',
        description: null,
        events: ['user.created'],
        secret: 'whsec_c2VjcmV0',
        starts_after: await log.feed.head(),
      },
      new Date().toISOString(),
    )
    dispatcher.endpointsChanged()
    await log.record(SYSTEM, { action: 'user.created', target: { type: 'user', id: '99' } })
    await log.record(SYSTEM, { action: 'user.deleted', target: { type: 'user', id: '99' } })
    for (let tries = 0; queued === 0 && tries < 300; tries++) await Bun.sleep(10)
    await dispatcher.stop()
    const deliveries = await env.a.outbound.pageDeliveries(1, { limit: 10, before: null })
    expect(deliveries.map((row) => [row.type, JSON.parse(row.payload).data.target.id])).toEqual([
      ['user.created', '99'],
    ])
  })
})
