import { describe, expect, test } from 'bun:test'
import { testConfig } from '../../src/config'
import { TokenBuckets } from '../../src/http/rate-limit'
import { memoryLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { expectEnvelope, makeTestApp, tempDir } from '../helpers/app'

function clock(start = Date.parse('2026-11-21T12:00:00Z')) {
  let at = start
  return {
    now: () => at,
    date: () => new Date(at),
    advance: (ms: number) => {
      at += ms
    },
  }
}

describe('TokenBuckets', () => {
  test('a burst of N, then one more every 1/N s', () => {
    const time = clock()
    const buckets = new TokenBuckets(4, 4, time.now)
    const taken = Array.from({ length: 5 }, () => buckets.take('ip'))
    expect(taken.map((d) => d.allowed)).toEqual([true, true, true, true, false])
    expect(taken.map((d) => d.remaining)).toEqual([3, 2, 1, 0, 0])
    expect(taken[4]?.retryAfterS).toBe(1)
    expect(taken[3]?.resetS).toBe(1)
    time.advance(250)
    expect(buckets.take('ip').allowed).toBe(true)
    expect(buckets.take('ip').allowed).toBe(false)
    expect(buckets.take('another ip').allowed).toBe(true)
  })

  test('a flood of distinct clients keeps the table bounded', () => {
    const time = clock()
    const buckets = new TokenBuckets(1, 1, time.now)
    for (let i = 0; i < 150_000; i++) buckets.take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`)
    expect(buckets.size).toBeLessThanOrEqual(100_000)
  })
})

describe('--rate-limit', () => {
  test('off by default: no RateLimit headers', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/users')
    expect(reply.headers.get('ratelimit-limit')).toBeNull()
  })

  test('N/s per client: headers on every answer, then 429 with Retry-After; a refused write changes nothing', async () => {
    const time = clock()
    await using t = await makeTestApp({ rateLimit: 3 }, time.date)
    const replies = [await t.get('/users'), await t.get('/users/1'), await t.get('/v2/users')]
    expect(replies.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0'])
    for (const reply of replies) {
      expect(reply.headers.get('ratelimit-limit')).toBe('3')
      expect(reply.headers.get('ratelimit-policy')).toBe('3;w=1')
      expect(Number(reply.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1)
    }
    const refused = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const error = expectEnvelope(refused, 429, 'RATE_LIMITED')
    expect(error.message).toContain('3 requests a second')
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
    expect(await t.deps.users.count()).toBe(0)
    // Refused before routing, and still counted once, under the route the path belongs to.
    expect(t.deps.metrics.http.count('/users', 'POST', 429)).toBe(1)
    time.advance(1000)
    expect((await t.post('/users', { name: 'Ada', email: 'ada@example.com' })).status).toBe(201)
  })

  test('/health and /metrics are exempt', async () => {
    const time = clock()
    await using t = await makeTestApp({ rateLimit: 1 }, time.date)
    await t.get('/users')
    expect((await t.get('/users')).status).toBe(429)
    for (const path of ['/health', '/v1/health', '/v2/health', '/metrics']) {
      const reply = await t.get(path)
      expect(reply.status).toBe(200)
      expect(reply.headers.get('ratelimit-limit')).toBeNull()
    }
  })

  test('X-Forwarded-For names the client only with --trust-proxy, by the entry the proxy appended', async () => {
    const time = clock()
    // The client wrote the first entry; the proxy appended the last (the address it saw).
    const as = (ip: string) => ({ headers: { 'x-forwarded-for': `198.51.100.77, ${ip}` } })
    {
      await using t = await makeTestApp({ rateLimit: 1, trustProxy: { hops: 1 } }, time.date)
      expect((await t.get('/users', as('203.0.113.1'))).status).toBe(200)
      expect((await t.get('/users', as('203.0.113.1'))).status).toBe(429)
      expect((await t.get('/users', as('203.0.113.2'))).status).toBe(200)
    }
    {
      await using t = await makeTestApp({ rateLimit: 1 }, time.date)
      expect((await t.get('/users', as('203.0.113.1'))).status).toBe(200)
      // A forged header does not buy a fresh bucket.
      expect((await t.get('/users', as('203.0.113.2'))).status).toBe(429)
    }
  })

  test('a refused request from a listed origin still carries the CORS headers', async () => {
    const time = clock()
    await using t = await makeTestApp(
      { rateLimit: 1, corsOrigins: ['https://app.example.com'] },
      time.date,
    )
    await t.get('/users')
    const reply = await t.get('/users', { headers: { origin: 'https://app.example.com' } })
    expect(reply.status).toBe(429)
    expect(reply.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
    expect(reply.headers.get('access-control-expose-headers')).toContain('retry-after')
    expect(reply.headers.get('access-control-expose-headers')).toContain('ratelimit-remaining')
  })

  test('over real sockets the peer address is the key', async () => {
    using dir = tempDir()
    const server = await startServer(
      testConfig({ dataDir: dir.path, rateLimit: 2 }),
      memoryLogger(),
    )
    try {
      const statuses = []
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${server.url}/users`, {
          headers: { 'x-forwarded-for': `198.51.100.${i}` },
        })
        statuses.push(response.status)
        await response.arrayBuffer()
      }
      expect(statuses).toEqual([200, 200, 429])
    } finally {
      await server.stop()
    }
  })
})
