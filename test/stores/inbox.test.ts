import { describe, expect, test } from 'bun:test'
import type { Backend } from '../../src/backends/index'
import type { ReceivedEvent } from '../../src/webhooks/inbox'
import { twoBackends } from '../helpers/stores'

// The webhook inbox's contract, on SQLite (npm test) and on PostgreSQL with two instances
// (npm run test:postgres). See test/helpers/stores.ts.

const event = (eventId: string, bodySha256: string | null = null): ReceivedEvent => ({
  eventId,
  scheme: bodySha256 === null ? 'standard' : 'sha256',
  type: 'user.created',
  payload: JSON.stringify({ id: eventId }),
  bodySha256,
})

const finish = (backend: Backend, seq: number) =>
  backend.transaction((tx) => tx.inbox.finish(seq, 'processed'))
const fail = (backend: Backend, seq: number, retryAt: number | null) =>
  backend.transaction((tx) => tx.inbox.fail(seq, 'the handler threw', retryAt))

describe('webhook inbox contract (two instances where the backend is shared)', () => {
  test('the same event delivered to both at once is stored once', async () => {
    await using env = await twoBackends()
    for (let round = 0; round < 10; round++) {
      const stored = await Promise.all([
        env.a.inbox.record(event(`evt_${round}`)),
        env.b.inbox.record(event(`evt_${round}`)),
      ])
      expect(stored.sort()).toEqual([false, true])
    }
    expect(await env.a.inbox.count()).toBe(10)
  })

  test('a replay is told apart by its body hash where the scheme has no event id of its own', async () => {
    await using env = await twoBackends()
    expect(await env.a.inbox.record(event('evt_h1', 'f'.repeat(64)))).toBe(true)
    expect(await env.b.inbox.record(event('evt_h2', 'f'.repeat(64)))).toBe(false)
    expect(await env.b.inbox.record(event('evt_h3', 'e'.repeat(64)))).toBe(true)
  })

  test('claims: due events, earliest first; on a shared database no event goes to two workers', async () => {
    await using env = await twoBackends()
    for (let i = 0; i < 20; i++) await env.a.inbox.record(event(`evt_${i}`))
    const [first, second] = await Promise.all([env.a.inbox.claimDue(10), env.b.inbox.claimDue(10)])
    const firstIds = (first ?? []).map((e) => e.eventId)
    const order = (ids: string[]) => ids.map((id) => Number(id.slice(4)))
    expect(order(firstIds)).toEqual(order(firstIds).sort((x, y) => x - y))
    if (env.a.shared) {
      const both = [...firstIds, ...(second ?? []).map((e) => e.eventId)]
      expect(new Set(both).size).toBe(both.length)
      expect(both.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `evt_${i}`).sort())
    } else {
      // One worker per file: a claim is a read, and a second one sees the same events.
      expect((second ?? []).map((e) => e.eventId)).toEqual(firstIds)
    }
  })

  test('an outcome ends the claim: processed events are not due again, released ones are', async () => {
    await using env = await twoBackends()
    await env.a.inbox.record(event('evt_done'))
    await env.a.inbox.record(event('evt_back'))
    const claimed = await env.a.inbox.claimDue(10)
    const done = claimed.find((e) => e.eventId === 'evt_done')
    const back = claimed.find((e) => e.eventId === 'evt_back')
    await finish(env.a, done?.seq as number)
    await env.a.inbox.release([back?.seq as number])
    expect((await env.b.inbox.claimDue(10)).map((e) => e.eventId)).toEqual(['evt_back'])
    expect(await env.b.inbox.waiting()).toBe(1)
  })

  test('a failure is due again at its retry time; one given up on waits for a retry by hand', async () => {
    await using env = await twoBackends()
    await env.a.inbox.record(event('evt_later'))
    await env.a.inbox.record(event('evt_dead'))
    const claimed = await env.a.inbox.claimDue(10)
    const at = env.clock.now()
    for (const e of claimed)
      await fail(env.a, e.seq, e.eventId === 'evt_later' ? at + 60_000 : null)
    expect(await env.b.inbox.claimDue(10)).toEqual([])
    expect(await env.b.inbox.earliestDue()).toBe(at + 60_000)
    env.clock.advance(60_000)
    const again = await env.b.inbox.claimDue(10)
    expect(again.map((e) => [e.eventId, e.attempts])).toEqual([['evt_later', 1]])
    await finish(env.b, again[0]?.seq as number)
    expect(await env.b.inbox.retry('evt_none')).toBe('missing')
    expect(await env.b.inbox.retry('evt_later')).toBe('not-failed')
    expect(await env.b.inbox.retry('evt_dead')).toMatchObject({ id: 'evt_dead', attempts: 1 })
    // Due now, on either instance.
    expect((await env.a.inbox.claimDue(10)).map((e) => e.eventId)).toEqual(['evt_dead'])
  })

  test('the list is newest first and filters by status', async () => {
    await using env = await twoBackends()
    for (const id of ['evt_1', 'evt_2', 'evt_3']) {
      await env.a.inbox.record(event(id))
      env.clock.advance(1000)
    }
    const [oldest] = await env.a.inbox.claimDue(1)
    await finish(env.a, oldest?.seq as number)
    const all = await env.b.inbox.list({ limit: 10, offset: 0 })
    expect(all.total).toBe(3)
    expect(all.data.map((e) => e.id)).toEqual(['evt_3', 'evt_2', 'evt_1'])
    const oldestFirst = await env.b.inbox.list({ limit: 2, offset: 0, first: 'oldest' })
    expect(oldestFirst.data.map((e) => e.id)).toEqual(['evt_1', 'evt_2'])
    const pending = await env.b.inbox.list({ limit: 10, offset: 0, first: 'oldest' }, 'pending')
    expect(pending.data.map((e) => e.id)).toEqual(['evt_2', 'evt_3'])
    const processed = await env.b.inbox.list({ limit: 10, offset: 0 }, 'processed')
    expect(processed.data.map((e) => [e.id, e.status])).toEqual([['evt_1', 'processed']])
  })

  test('the purge takes old events that wait for nothing, in batches, on every instance at once', async () => {
    await using env = await twoBackends()
    for (let i = 0; i < 5; i++) await env.a.inbox.record(event(`evt_old${i}`))
    const claimed = await env.a.inbox.claimDue(10)
    for (const e of claimed.slice(0, 4)) await finish(env.a, e.seq)
    env.clock.advance(1000)
    await env.a.inbox.record(event('evt_new'))
    const cutoff = new Date(env.clock.now() - 500).toISOString()
    const purged = await Promise.all([
      env.a.inbox.purgeReceivedBefore(cutoff, 2),
      env.b.inbox.purgeReceivedBefore(cutoff, 2),
    ])
    expect(purged.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(4)
    while ((await env.a.inbox.purgeReceivedBefore(cutoff, 2)) > 0);
    const left = await env.b.inbox.list({ limit: 10, offset: 0 })
    // The pending old one stays (it waits for its handler), as does the new one.
    expect(left.data.map((e) => e.id).sort()).toEqual(
      ['evt_new', claimed[4]?.eventId as string].sort(),
    )
  })
})
