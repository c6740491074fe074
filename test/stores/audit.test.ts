import { describe, expect, test } from 'bun:test'
import { type AuditSource, commandLine, SYSTEM } from '../../src/audit/events'
import type { FeedEntry } from '../../src/audit/log'
import type { Deps } from '../../src/deps'
import { ManualClock } from '../../src/timers'
import { twoInstances } from '../helpers/stores'

// The audit log's contract, on SQLite (npm test) and on PostgreSQL with two instances
// (npm run test:postgres). See test/helpers/stores.ts.

const admin: AuditSource = { actor: { type: 'user', id: '1' }, requestId: 'req_1', ip: '10.0.0.9' }
const key: AuditSource = { actor: { type: 'api_key', id: '7' }, requestId: 'req_2', ip: null }

const userEvent = (action: string, id: string) => ({
  action,
  target: { type: 'user', id },
  changes: { name: { before: null, after: 'Ann' } },
})

/**
 * The feed after `position` once it holds `count` events. On PostgreSQL an event shows once
 * every older transaction of the cluster has ended, other databases' included (another test
 * file's), so it may take a moment.
 */
async function feedOf(
  log: Deps['audit'],
  position: string | null,
  count: number,
  limit = 100,
): Promise<FeedEntry[]> {
  for (let tries = 0; ; tries++) {
    const rows = await log.feed.after(position, limit)
    if (rows.length >= Math.min(count, limit) || tries === 200) return rows
    await Bun.sleep(10)
  }
}

describe('audit log contract (two instances where the backend is shared)', () => {
  test('an event is read back as written, newest first, whichever instance wrote it', async () => {
    const clock = new ManualClock(Date.parse('2026-11-25T10:00:00.000Z'))
    await using env = await twoInstances(clock)
    await env.a.audit.record(admin, userEvent('user.created', '5'))
    clock.advance(1000)
    await env.b.audit.record(key, {
      action: 'api_key.revoked',
      target: { type: 'api_key', id: '3' },
    })
    const { data, next } = await env.a.audit.page({}, { limit: 10, before: null })
    expect(next).toBeNull()
    expect(data.map((event) => event.action)).toEqual(['api_key.revoked', 'user.created'])
    expect(data[1]).toEqual({
      id: expect.stringMatching(/^evt_[0-9]+$/),
      at: '2026-11-25T10:00:00.000Z',
      actor: { type: 'user', id: '1' },
      action: 'user.created',
      target: { type: 'user', id: '5' },
      request_id: 'req_1',
      ip: '10.0.0.9',
      changes: { name: { before: null, after: 'Ann' } },
    })
    expect(data[0]?.changes).toBeNull()
    const seq = Number(data[1]?.id.slice(4))
    expect(await env.b.audit.get(seq)).toEqual(data[1] ?? null)
    expect(await env.b.audit.get(seq + 1000)).toBeNull()
  })

  test('filters: actor, target, an action or a kind of action, and a time range', async () => {
    const clock = new ManualClock(Date.parse('2026-11-25T10:00:00.000Z'))
    await using env = await twoInstances(clock)
    await env.a.audit.record(admin, userEvent('user.created', '5'))
    clock.advance(60_000)
    await env.a.audit.record(key, userEvent('user.updated', '5'))
    clock.advance(60_000)
    await env.a.audit.record(key, userEvent('user.updated', '6'))
    await env.a.audit.record(SYSTEM, { action: 'user_x.updated', target: { type: 'x', id: null } })
    await env.a.audit.record(commandLine('ops'), {
      action: 'api_key.created',
      target: { type: 'api_key', id: '1' },
    })
    const actions = async (filter: Parameters<typeof env.a.audit.page>[0]) =>
      (await env.b.audit.page(filter, { limit: 10, before: null })).data.map(
        (event) => `${event.action} ${event.target.id}`,
      )
    expect(await actions({ targetType: 'user', targetId: '5' })).toEqual([
      'user.updated 5',
      'user.created 5',
    ])
    expect(await actions({ actorType: 'api_key', actorId: '7' })).toEqual([
      'user.updated 6',
      'user.updated 5',
    ])
    expect(await actions({ actorType: 'cli' })).toEqual(['api_key.created 1'])
    expect(await actions({ action: 'user.updated' })).toEqual(['user.updated 6', 'user.updated 5'])
    // A kind is its prefix and the dot: `user_x.updated` is not a user event.
    expect(await actions({ action: 'user.*' })).toEqual([
      'user.updated 6',
      'user.updated 5',
      'user.created 5',
    ])
    expect(
      await actions({ since: '2026-11-25T10:01:00.000Z', until: '2026-11-25T10:02:00.000Z' }),
    ).toEqual(['user.updated 5'])
    expect(await actions({ targetType: 'group' })).toEqual([])
  })

  test('pages go back in time without repeats or gaps', async () => {
    await using env = await twoInstances()
    for (let n = 1; n <= 7; n++) await env.a.audit.record(admin, userEvent('user.created', `${n}`))
    const seen: string[] = []
    let before: number | null = null
    for (let pages = 0; pages < 10; pages++) {
      const page: Awaited<ReturnType<typeof env.a.audit.page>> = await env.b.audit.page(
        { action: 'user.created' },
        { limit: 3, before },
      )
      seen.push(...page.data.map((event) => event.target.id ?? ''))
      if (page.next === null) break
      before = page.next
    }
    expect(seen).toEqual(['7', '6', '5', '4', '3', '2', '1'])
  })

  test('an event written in a unit of work commits with it, and goes when the unit fails', async () => {
    await using env = await twoInstances()
    const failed = env.a.transaction(async (tx) => {
      await tx.users.create({ name: 'Ann', email: 'ann@example.com', passwordHash: null }, admin)
      await tx.audit.record(admin, { action: 'group.updated', target: { type: 'group', id: '1' } })
      throw new Error('the change failed after its events were written')
    })
    await expect(failed).rejects.toThrow('the change failed')
    const bo = await env.a.transaction((tx) =>
      tx.users.create({ name: 'Bo', email: 'bo@example.com', passwordHash: null }, admin),
    )
    const { data } = await env.b.audit.page({}, { limit: 10, before: null })
    expect(data.map((event) => `${event.action} ${event.target.id}`)).toEqual([
      `user.created ${bo.id}`,
    ])
    expect(await env.b.users.count()).toBe(1)
  })

  test('the feed: in order from a position, resumable, each event once, on either instance', async () => {
    await using env = await twoInstances()
    await env.a.audit.record(admin, userEvent('user.created', 'before'))
    const start = await env.b.audit.feed.head()
    expect(env.a.audit.feed.isPosition(start)).toBe(true)
    for (let n = 1; n <= 5; n++) {
      await (n % 2 === 0 ? env.a : env.b).audit.record(admin, userEvent('user.created', `${n}`))
    }
    const first = await feedOf(env.a.audit, start, 3, 3)
    const rest = await feedOf(env.b.audit, first.at(-1)?.position ?? start, 2)
    expect([...first, ...rest].map((entry) => entry.event.target.id)).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
    ])
    const positions = [...first, ...rest].map((entry) => entry.position)
    expect([...positions].sort()).toEqual(positions)
    expect(await env.a.audit.feed.after(positions.at(-1) ?? start, 10)).toEqual([])
    const all = await feedOf(env.a.audit, null, 6)
    expect(all.map((entry) => entry.event.target.id)).toEqual(['before', '1', '2', '3', '4', '5'])
  })

  test('the feed never passes an event that commits after a later one (a long unit of work)', async () => {
    await using env = await twoInstances()
    const start = await env.a.audit.feed.head()
    let finish = () => {}
    const held = new Promise<void>((resolve) => {
      finish = resolve
    })
    let recorded = () => {}
    const inUnit = new Promise<void>((resolve) => {
      recorded = resolve
    })
    const slow = env.a.transaction(async (tx) => {
      await tx.audit.record(admin, userEvent('user.created', 'slow'))
      recorded()
      await held
    })
    await inUnit
    // The second write commits first on PostgreSQL; on SQLite it waits for the writer.
    const quick = env.b.audit.record(key, userEvent('user.created', 'quick'))
    if (env.backend === 'postgres') await quick
    const early = await env.a.audit.feed.after(start, 10)
    expect(early).toEqual([])
    finish()
    await slow
    await quick
    const late = await feedOf(env.b.audit, start, 2)
    expect(late.map((entry) => entry.event.target.id)).toEqual(['slow', 'quick'])
  })

  test('watchers are woken when an event commits, on every instance', async () => {
    await using env = await twoInstances()
    let wakes = 0
    const stop = await env.a.audit.feed.watch(() => {
      wakes += 1
    })
    await env.b.audit.record(admin, userEvent('user.created', '1'))
    for (let tries = 0; tries < 100 && wakes === 0; tries++) await Bun.sleep(20)
    expect(wakes).toBeGreaterThan(0)
    stop()
  })

  test('positions are checked: text this database never handed out is not one', async () => {
    await using env = await twoInstances()
    for (const text of [
      '',
      'abc',
      '1',
      '-1',
      '00000000000000000001x',
      '1e9',
      ' 0000000000000001',
    ]) {
      expect(env.a.audit.feed.isPosition(text)).toBe(false)
    }
  })

  test('a target’s events page newest first across a long log (SQLite reads them block by block)', async () => {
    await using env = await twoInstances()
    // 1,300 events, every 97th about user 5: its events lie in six blocks of 256.
    await env.a.transaction(async (tx) => {
      for (let n = 1; n <= 1300; n++) {
        await tx.audit.record(admin, userEvent('user.updated', n % 97 === 0 ? '5' : `u${n}`))
      }
    })
    const seen: number[] = []
    let before: number | null = null
    for (let pages = 0; pages < 10; pages++) {
      const page: Awaited<ReturnType<typeof env.a.audit.page>> = await env.b.audit.page(
        { targetType: 'user', targetId: '5' },
        { limit: 4, before },
      )
      seen.push(...page.data.map((event) => Number(event.id.slice(4))))
      if (page.next === null) break
      before = page.next
    }
    expect(seen).toHaveLength(13)
    expect(seen).toEqual(seen.toSorted((a, b) => b - a))
    const filtered = await env.a.audit.page(
      { targetType: 'user', targetId: '5', actorType: 'api_key' },
      { limit: 4, before: null },
    )
    expect(filtered.data).toEqual([])
  })

  test('the purge never takes the newest event, so its seq is never handed out again', async () => {
    const clock = new ManualClock(Date.parse('2026-08-01T00:00:00.000Z'))
    await using env = await twoInstances(clock)
    for (let n = 1; n <= 3; n++) await env.a.audit.record(SYSTEM, userEvent('user.deleted', `${n}`))
    const newest = (await env.a.audit.page({}, { limit: 1, before: null })).data[0]?.id
    clock.advance(365 * 86_400_000)
    expect(await env.b.audit.purgeBefore(clock.date().toISOString(), 100)).toBe(2)
    await env.a.audit.record(SYSTEM, userEvent('user.deleted', 'after'))
    const { data } = await env.a.audit.page({}, { limit: 10, before: null })
    expect(data.map((event) => event.target.id)).toEqual(['after', '3'])
    expect(Number(data[0]?.id.slice(4))).toBeGreaterThan(Number(newest?.slice(4)))
  })

  test('the purge deletes the oldest events before the cutoff, at most as many as asked', async () => {
    const clock = new ManualClock(Date.parse('2026-08-01T00:00:00.000Z'))
    await using env = await twoInstances(clock)
    for (let n = 1; n <= 5; n++) await env.a.audit.record(SYSTEM, userEvent('user.deleted', `${n}`))
    clock.advance(86_400_000)
    await env.a.audit.record(SYSTEM, userEvent('user.deleted', 'kept'))
    const cutoff = '2026-08-01T12:00:00.000Z'
    expect(await env.b.audit.purgeBefore(cutoff, 3)).toBe(3)
    expect(await env.a.audit.purgeBefore(cutoff, 3)).toBe(2)
    expect(await env.a.audit.purgeBefore(cutoff, 3)).toBe(0)
    const { data } = await env.a.audit.page({}, { limit: 10, before: null })
    expect(data.map((event) => event.target.id)).toEqual(['kept'])
  })
})
