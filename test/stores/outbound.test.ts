import { describe, expect, test } from 'bun:test'
import type { Backend } from '../../src/backends/index'
import type { AttemptOutcome, NewDelivery } from '../../src/outbound/deliveries'
import type { EndpointRecord } from '../../src/outbound/endpoints'
import { ManualClock } from '../../src/timers'
import { codeOf, twoBackends } from '../helpers/stores'

// The outbound webhooks' rows (endpoints, the dispatcher's place, the delivery queue), on
// SQLite (npm test) and on PostgreSQL with two instances (npm run test:postgres). See
// test/helpers/stores.ts. The rules on top are tested in test/outbound/.

const SECRET = `whsec_${Buffer.from('outbound-contract-secret-24b').toString('base64')}`

async function endpoint(backend: Backend, url = 'https://hooks.example.com/in', events = ['*']) {
  return backend.outbound.insert(
    { url, description: null, events, secret: SECRET, starts_after: '0' },
    new Date().toISOString(),
  )
}

const delivery = (endpointId: number, n: number): NewDelivery => ({
  endpointId,
  eventId: `evt_${n}`,
  type: 'user.created',
  payload: JSON.stringify({ type: 'user.created', n }),
})

const ok = (at: number): AttemptOutcome => ({ at, status: 200, body: 'ok', error: null, ms: 3 })
const refused = (at: number): AttemptOutcome => ({
  at,
  status: 500,
  body: 'down',
  error: 'HTTP 500',
  ms: 4,
})

/** Queues `count` deliveries for each endpoint, as one dispatch from the start. */
async function queue(backend: Backend, endpoints: readonly EndpointRecord[], count: number) {
  const deliveries = []
  for (let n = 1; n <= count; n++) {
    for (const each of endpoints) deliveries.push(delivery(each.id, n))
  }
  const at = new Date(Date.now() - 1000).toISOString()
  expect(await backend.outbound.dispatch(null, 'p1', deliveries, at)).toBe(true)
}

describe('outbound webhooks contract (two instances where the backend is shared)', () => {
  test('an endpoint reads back as written; updates check the version; deleting takes its deliveries', async () => {
    await using env = await twoBackends()
    const made = await endpoint(env.a, 'https://hooks.example.com/a', ['user.*', 'group.created'])
    expect(made).toMatchObject({
      url: 'https://hooks.example.com/a',
      events: ['user.*', 'group.created'],
      status: 'enabled',
      disabled_reason: null,
      secret: SECRET,
      previous_secret: null,
      starts_after: '0',
      version: 1,
    })
    expect(await env.b.outbound.getEndpoint(made.id)).toEqual(made)
    const { after } = await env.b.outbound.update(
      made.id,
      { status: 'disabled', disabled_reason: 'by hand' },
      { versions: [1] },
      new Date().toISOString(),
    )
    expect(after).toMatchObject({ status: 'disabled', disabled_reason: 'by hand', version: 2 })
    const stale = env.a.outbound.update(
      made.id,
      { url: 'https://x.example' },
      { versions: [1] },
      '',
    )
    expect(await stale.catch((error: { errorCode?: string }) => error.errorCode)).toBe(
      'PRECONDITION_FAILED',
    )
    // The change is worked out from the row as locked (a rotation keeps the secret it replaces).
    const rotated = await env.a.outbound.update(
      made.id,
      (current) => ({ secret: 'whsec_bmV3', previous_secret: current.secret }),
      { versions: null },
      new Date().toISOString(),
    )
    expect(rotated.after).toMatchObject({ secret: 'whsec_bmV3', previous_secret: SECRET })
    await queue(env.a, [made], 2)
    expect(await env.a.outbound.pageDeliveries(made.id, { limit: 10, before: null })).toHaveLength(
      2,
    )
    await env.b.outbound.remove(made.id, { versions: null })
    expect(await env.a.outbound.getEndpoint(made.id)).toBeNull()
    expect(await env.a.outbound.getDelivery(made.id, 1)).toBeNull()
    expect(await env.a.outbound.pageDeliveries(made.id, { limit: 10, before: null })).toEqual([])
    const missing = env.a.outbound.remove(made.id, { versions: null })
    expect(await missing.catch((error: { errorCode?: string }) => error.errorCode)).toBe(
      'NOT_FOUND',
    )
  })

  test('endpoints page in id order (or newest first) with a total; only enabled ones are active', async () => {
    await using env = await twoBackends()
    const [first, second, third] = [
      await endpoint(env.a),
      await endpoint(env.a),
      await endpoint(env.b),
    ] as [EndpointRecord, EndpointRecord, EndpointRecord]
    await env.a.outbound.update(second.id, { status: 'disabled' }, { versions: null }, '')
    const page = await env.b.outbound.pageEndpoints({ limit: 2, offset: 1 })
    expect(page.total).toBe(3)
    expect(page.data.map((each) => each.id)).toEqual([second.id, third.id])
    const newest = await env.b.outbound.pageEndpoints({ limit: 2, offset: 0, first: 'newest' })
    expect(newest.data.map((each) => each.id)).toEqual([third.id, second.id])
    expect((await env.a.outbound.activeEndpoints()).map((each) => each.id)).toEqual([
      first.id,
      third.id,
    ])
    expect(await env.a.outbound.countEndpoints()).toBe(3)
  })

  test('a dispatch moves the place only from where it was: of two at once one wins, nothing is queued twice', async () => {
    await using env = await twoBackends()
    const one = await endpoint(env.a)
    expect(await env.a.outbound.dispatchedUpTo()).toBeNull()
    const at = new Date().toISOString()
    const batch = [delivery(one.id, 1), delivery(one.id, 2)]
    const outcomes = await Promise.all([
      env.a.outbound.dispatch(null, 'p2', batch, at),
      env.b.outbound.dispatch(null, 'p2', batch, at),
    ])
    expect(outcomes.filter(Boolean)).toHaveLength(1)
    expect(await env.b.outbound.dispatchedUpTo()).toBe('p2')
    // From a place that is not the current one: refused, and nothing written.
    expect(await env.a.outbound.dispatch('p1', 'p3', [delivery(one.id, 3)], at)).toBe(false)
    expect(await env.a.outbound.dispatchedUpTo()).toBe('p2')
    // An event queued again for the same endpoint is skipped; one for a deleted endpoint too.
    expect(
      await env.b.outbound.dispatch('p2', 'p3', [delivery(one.id, 2), delivery(9999, 4)], at),
    ).toBe(true)
    const queued = await env.a.outbound.pageDeliveries(one.id, { limit: 10, before: null })
    expect(queued.map((row) => row.event_id)).toEqual(['evt_2', 'evt_1'])
    expect(queued[1]).toMatchObject({
      endpoint_id: one.id,
      type: 'user.created',
      status: 'pending',
      attempts: 0,
      payload: JSON.stringify({ type: 'user.created', n: 1 }),
    })
  })

  test('the sender takes each enabled endpoint’s oldest pending delivery only; on a shared database only once', async () => {
    const clock = new ManualClock(Date.now())
    await using env = await twoBackends(clock)
    const [first, second, off] = [
      await endpoint(env.a),
      await endpoint(env.a),
      await endpoint(env.a),
    ] as [EndpointRecord, EndpointRecord, EndpointRecord]
    await env.a.outbound.update(off.id, { status: 'disabled' }, { versions: null }, '')
    await queue(env.a, [first, second, off], 3)
    const now = Date.now()
    const heads = (claimed: { endpointId: number; eventId: string }[]) =>
      claimed.map((each) => [each.endpointId, each.eventId]).sort()
    const [a, b] = await Promise.all([
      env.a.outbound.claimHeads(now, now + 60_000, 10, []),
      env.b.outbound.claimHeads(now, now + 60_000, 10, []),
    ])
    const expected = [
      [first.id, 'evt_1'],
      [second.id, 'evt_1'],
    ].sort()
    if (env.a.shared) {
      // A claim is a lease: the two instances split the heads, and hold them.
      expect(heads([...a, ...b])).toEqual(expected)
      expect(await env.b.outbound.claimHeads(now, now + 60_000, 10, [])).toEqual([])
      expect(await env.a.outbound.earliestDue()).toBe(now + 60_000)
    } else {
      // One sender per file: a claim is a read; what it has under way it leaves out itself.
      expect(heads(a)).toEqual(expected)
      expect(heads(b)).toEqual(expected)
      const busy = [first.id, second.id]
      expect(await env.a.outbound.claimHeads(now, now + 60_000, 10, busy)).toEqual([])
    }
    const claimed = [...a, ...b]
    expect(claimed[0]).toMatchObject({
      url: 'https://hooks.example.com/in',
      attempts: 0,
      firstAttemptAt: null,
      secret: SECRET,
      previous_secret: null,
    })
    const head = claimed.find((each) => each.endpointId === first.id)
    await env.b.outbound.delivered(head?.id ?? 0, ok(now))
    const next = await env.a.outbound.claimHeads(now, now + 60_000, 10, [second.id])
    expect(heads(next)).toEqual([[first.id, 'evt_2']])
    expect(await env.a.outbound.getDelivery(first.id, head?.id ?? 0)).toMatchObject({
      status: 'delivered',
      attempts: 1,
      response_status: 200,
      response_body: 'ok',
      last_error: null,
      duration_ms: 3,
      last_attempt_at: now,
      delivered_at: now + 3,
    })
    // Given back (the sender stopped before trying it): due again at once.
    const other = claimed.find((each) => each.endpointId === second.id)
    await env.a.outbound.release([other?.id ?? 0])
    expect(heads(await env.a.outbound.claimHeads(now, now + 1, 10, [first.id]))).toEqual([
      [second.id, 'evt_1'],
    ])
  })

  test('a failed attempt waits for its retry and keeps the endpoint’s order; the last one fails it', async () => {
    await using env = await twoBackends()
    const one = await endpoint(env.a)
    await queue(env.a, [one], 2)
    const now = Date.now()
    const [head] = await env.a.outbound.claimHeads(now, now + 60_000, 10, [])
    await env.a.outbound.failed(head?.id ?? 0, refused(now), now + 5000, now)
    // Not due yet, and its successor waits behind it.
    expect(await env.b.outbound.claimHeads(now + 4999, now + 60_000, 10, [])).toEqual([])
    expect(await env.b.outbound.earliestDue()).toBe(now + 5000)
    const [again] = await env.b.outbound.claimHeads(now + 5000, now + 60_000, 10, [])
    expect(again).toMatchObject({ id: head?.id, attempts: 1, firstAttemptAt: now })
    expect(await env.a.outbound.getDelivery(one.id, head?.id ?? 0)).toMatchObject({
      status: 'pending',
      attempts: 1,
      response_status: 500,
      response_body: 'down',
      last_error: 'HTTP 500',
      next_attempt_at: now + 5000,
    })
    await env.b.outbound.failed(again?.id ?? 0, refused(now + 5000), null, now)
    expect(await env.a.outbound.getDelivery(one.id, head?.id ?? 0)).toMatchObject({
      status: 'failed',
      attempts: 2,
      next_attempt_at: null,
    })
    // A failed one no longer holds the line.
    const [second] = await env.a.outbound.claimHeads(now + 5000, now + 60_000, 10, [])
    expect(second?.eventId).toBe('evt_2')
  })

  test('a retry makes any delivery of the endpoint pending and due, with attempts starting over', async () => {
    await using env = await twoBackends()
    const one = await endpoint(env.a)
    const other = await endpoint(env.a)
    await queue(env.a, [one], 1)
    const now = Date.now()
    const [head] = await env.a.outbound.claimHeads(now, now + 60_000, 10, [])
    await env.a.outbound.failed(head?.id ?? 0, refused(now), null, now)
    expect(await env.b.outbound.retry(other.id, head?.id ?? 0, now)).toBeNull()
    const retried = await env.b.outbound.retry(one.id, head?.id ?? 0, now + 10)
    expect(retried).toMatchObject({ status: 'pending', attempts: 0, next_attempt_at: now + 10 })
    const [again] = await env.a.outbound.claimHeads(now + 10, now + 60_000, 10, [])
    expect(again).toMatchObject({ id: head?.id, attempts: 0, firstAttemptAt: null })
  })

  test('the delivery log pages newest first by id, filtered by status', async () => {
    await using env = await twoBackends()
    const one = await endpoint(env.a)
    await queue(env.a, [one], 5)
    const now = Date.now()
    const [head] = await env.a.outbound.claimHeads(now, now + 60_000, 10, [])
    await env.a.outbound.delivered(head?.id ?? 0, ok(now))
    const first = await env.b.outbound.pageDeliveries(one.id, { limit: 2, before: null })
    expect(first.map((row) => row.event_id)).toEqual(['evt_5', 'evt_4', 'evt_3'])
    const older = await env.b.outbound.pageDeliveries(one.id, {
      limit: 2,
      before: first[1]?.id ?? 0,
    })
    expect(older.map((row) => row.event_id)).toEqual(['evt_3', 'evt_2', 'evt_1'])
    const done = await env.b.outbound.pageDeliveries(one.id, {
      limit: 10,
      before: null,
      status: 'delivered',
    })
    expect(done.map((row) => row.event_id)).toEqual(['evt_1'])
  })

  test('the purge deletes finished deliveries made before the cutoff, never pending ones', async () => {
    await using env = await twoBackends()
    const one = await endpoint(env.a)
    await queue(env.a, [one], 3)
    const now = Date.now()
    const [head] = await env.a.outbound.claimHeads(now, now + 60_000, 10, [])
    await env.a.outbound.delivered(head?.id ?? 0, ok(now))
    const future = new Date(Date.now() + 60_000).toISOString()
    expect(await env.b.outbound.purgeBefore(new Date(0).toISOString(), 10)).toBe(0)
    expect(await env.b.outbound.purgeBefore(future, 10)).toBe(1)
    const left = await env.a.outbound.pageDeliveries(one.id, { limit: 10, before: null })
    expect(left.map((row) => row.status)).toEqual(['pending', 'pending'])
  })

  test('ten rounds of two senders claiming at once: on a shared database each head goes to one of them', async () => {
    await using env = await twoBackends()
    const endpoints = []
    for (let i = 0; i < 4; i++) endpoints.push(await endpoint(env.a))
    await queue(env.a, endpoints, 10)
    let now = Date.now()
    const seen: string[] = []
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.allSettled([
        env.a.outbound.claimHeads(now, now + 60_000, 10, []),
        env.b.outbound.claimHeads(now, now + 60_000, 10, []),
      ])
      expect(outcomes.map(codeOf)).toEqual(['ok', 'ok'])
      const [a, b] = outcomes.map((outcome) =>
        outcome.status === 'fulfilled' ? outcome.value : [],
      )
      // On SQLite b is a: the same read twice; only a shared database has two senders.
      const claimed = env.a.shared ? [...(a ?? []), ...(b ?? [])] : (a ?? [])
      expect(claimed).toHaveLength(4)
      for (const each of claimed) {
        seen.push(`${each.endpointId}:${each.eventId}`)
        await env.a.outbound.delivered(each.id, ok(now))
      }
      now += 1
    }
    expect(new Set(seen).size).toBe(40)
  })
})
