import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { runBinary } from '../helpers/binary'
import { startCluster, until } from '../helpers/cluster'
import { queryOnce } from '../helpers/postgres'
import { startReceiver, verifyDelivery } from '../helpers/receiver'
import { SseReader } from '../helpers/sse'

// The audit feed on two instances of the compiled binary sharing PostgreSQL: an SSE client
// with EventSource's habits (reconnect, Last-Event-ID) follows it across a SIGKILL while
// writers load both instances; every change is in the feed once, in one order. An outbound
// webhook endpoint receives the same changes: each at least once, in feed order, a second
// copy only of a delivery an instance was killed holding.

setDefaultTimeout(180_000)

interface FeedEvent {
  id: string
  action: string
  target: { type: string; id: string | null }
}

/**
 * Follows /events as EventSource does: on an ended or broken stream it reconnects (here to the
 * next instance) with the last id it saw, until stopped.
 */
function follow(urls: () => string[], key: string) {
  const seen: { place: string; event: FeedEvent }[] = []
  let stopped = false
  let reconnects = 0
  let current: SseReader | null = null
  const done = (async () => {
    for (let attempt = 0; !stopped; attempt += 1) {
      const base = urls()[attempt % urls().length] as string
      const last = seen.at(-1)?.place
      try {
        const response = await fetch(`${base}/events`, {
          headers: { 'x-api-key': key, ...(last === undefined ? {} : { 'last-event-id': last }) },
        })
        if (response.status !== 200) throw new Error(`status ${response.status}`)
        current = new SseReader(response.body as ReadableStream<Uint8Array>)
        for (;;) {
          const frame = await current.next(60_000)
          if (frame === null) break
          if (frame.data !== undefined && frame.id !== undefined) {
            seen.push({ place: frame.id, event: JSON.parse(frame.data) as FeedEvent })
          }
        }
      } catch {
        // The instance died mid-stream or refused: reconnect as EventSource would.
      }
      if (!stopped) {
        reconnects += 1
        await Bun.sleep(100)
      }
    }
  })()
  return {
    seen,
    get reconnects() {
      return reconnects
    },
    async stop() {
      stopped = true
      await current?.cancel()
      await done
    },
  }
}

describe('the audit feed on two instances sharing PostgreSQL', () => {
  test('10,000 changes on both instances, a SIGKILL mid-stream: each event once, in one order; each delivered, in order', async () => {
    await using receiver = await startReceiver()
    await using cluster = await startCluster({ flags: ['--webhook-allow-private'] })
    const made = await runBinary(['keys', 'create', '--name', 'feed', ...cluster.cliFlags], {
      env: cluster.env,
    })
    const key = made.stdout.trim()
    const endpoint = await fetch(`${cluster.url}/webhook-endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ url: receiver.url, events: ['user.created'] }),
    })
    expect(endpoint.status).toBe(201)
    const { secret } = (await endpoint.json()) as { secret: string }
    const urls = () => cluster.instances.map((instance) => instance.url)
    const feed = follow(urls, key)
    // Subscribed before the first change: its stream starts with what happens next.
    await Bun.sleep(500)

    const TOTAL = 10_000
    let next = 0
    const writer = async () => {
      while (next < TOTAL) {
        const n = next++
        await fetch(`${cluster.url}/users`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: `User ${n}`, email: `user${n}@example.com` }),
        }).catch(() => null)
      }
    }
    const writers = Promise.all(Array.from({ length: 16 }, writer))
    await until(() => next > TOTAL / 3, 60_000)
    await cluster.kill(0)
    await Bun.sleep(500)
    await cluster.restart(0)
    await writers

    const ids = await queryOnce<{ id: number }>(cluster.databaseUrl, 'SELECT id FROM users')
    expect(ids.length).toBeGreaterThan(TOTAL * 0.9)
    const created = () => feed.seen.filter(({ event }) => event.action === 'user.created')
    await until(() => created().length >= ids.length, 60_000)
    await Bun.sleep(500)
    await feed.stop()

    const targets = created().map(({ event }) => Number(event.target.id))
    expect(new Set(targets).size).toBe(targets.length)
    expect([...targets].sort((a, b) => a - b)).toEqual(
      ids.map((row) => row.id).sort((a, b) => a - b),
    )
    const places = feed.seen.map(({ place }) => place)
    expect(places.every((place, i) => i === 0 || place > (places[i - 1] as string))).toBe(true)
    expect(new Set(feed.seen.map(({ event }) => event.id)).size).toBe(feed.seen.length)
    expect(feed.reconnects).toBeGreaterThanOrEqual(1)

    // The endpoint: every user.created of the feed, first arrivals in the feed's order. An
    // instance killed between a 2xx and its record sends that one again once its lease lapses.
    const feedOrder = created().map(({ event }) => event.id)
    const firsts = () => [...new Set(receiver.answered.map((entry) => entry.headers['webhook-id']))]
    await until(() => firsts().length >= feedOrder.length, 120_000)
    expect(firsts()).toEqual(feedOrder)
    const copies = receiver.answered.length - firsts().length
    expect(copies).toBeLessThanOrEqual(1)
    for (const entry of receiver.answered.slice(0, 50)) verifyDelivery(entry, secret)
  })

  test('each instance caps its own /events streams: one key, one stream on each; a second on either is 429 until one closes', async () => {
    await using cluster = await startCluster({
      flags: ['--max-event-streams-per-credential', '1'],
    })
    const made = await runBinary(['keys', 'create', '--name', 'feed', ...cluster.cliFlags], {
      env: cluster.env,
    })
    const key = made.stdout.trim()
    const open = (base: string) => fetch(`${base}/events`, { headers: { 'x-api-key': key } })
    const [first, second] = cluster.instances.map((instance) => instance.url) as [string, string]
    const streams = [await open(first), await open(second)]
    expect(streams.map((response) => response.status)).toEqual([200, 200])
    for (const base of [first, second]) {
      const refused = await open(base)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        'RATE_LIMITED',
      )
    }
    await streams[0]?.body?.cancel()
    let again: Response | null = null
    await until(async () => {
      again = await open(first)
      if (again.status !== 200) await again.body?.cancel()
      return again.status === 200
    })
    await (again as Response | null)?.body?.cancel()
    await streams[1]?.body?.cancel()
  })
})
