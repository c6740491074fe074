import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startS3 } from '../../scripts/s3-server'
import { type Cluster, startCluster, until } from '../helpers/cluster'
import { queryOnce } from '../helpers/postgres'

// The haproxy and nginx configurations of docs/several-instances.md, read from the page itself, in front of two
// binaries on one PostgreSQL database and one bucket: what each line promises, held.

setDefaultTimeout(60_000)

async function pendingObjects(cluster: Cluster): Promise<number> {
  const [row] = await queryOnce<{ n: number }>(
    cluster.databaseUrl,
    'SELECT count(*)::int AS n FROM pending_objects',
  )
  return row?.n ?? 0
}

const MiB = 1024 * 1024

for (const balancer of ['haproxy', 'nginx'] as const) {
  describe(`docs/several-instances.md's ${balancer} configuration in front of two instances`, () => {
    test('uploads stream through: an instance is receiving before the client has sent the rest; the file reads back whole and by range', async () => {
      await using cluster = await startCluster({ balancer, balance: 'source' })
      let sendRest = () => {}
      const rest = new Promise<void>((resolve) => {
        sendRest = resolve
      })
      const chunk = new Uint8Array(MiB).fill(0x78)
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i < 4; i += 1) controller.enqueue(chunk)
          // A buffering balancer holds these 4 MiB until the body ends: nothing reaches an
          // instance, and the wait below times out.
          await rest
          for (let i = 0; i < 4; i += 1) controller.enqueue(chunk)
          controller.close()
        },
      })
      const upload = fetch(`${cluster.url}/upload?filename=streamed.bin&public=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit)
      await until(async () => (await pendingObjects(cluster)) === 1, 5000)
      sendRest()
      const reply = await upload
      expect(reply.status).toBe(201)
      const [file] = ((await reply.json()) as { files: { id: string; size: number }[] }).files
      expect(file?.size).toBe(8 * MiB)
      expect(await pendingObjects(cluster)).toBe(0)
      const whole = await fetch(`${cluster.url}/files/${file?.id}`)
      expect((await whole.arrayBuffer()).byteLength).toBe(8 * MiB)
      const part = await fetch(`${cluster.url}/files/${file?.id}`, {
        headers: { range: `bytes=${5 * MiB}-${5 * MiB + 9}` },
      })
      expect(part.status).toBe(206)
      expect(await part.text()).toBe('x'.repeat(10))
    })

    test('client-IP affinity: the per-instance rate limit holds as one budget', async () => {
      await using cluster = await startCluster({
        balancer,
        balance: 'source',
        flags: ['--rate-limit', '5/s'],
      })
      const started = Date.now()
      const replies = await Promise.all(
        Array.from({ length: 30 }, () => fetch(`${cluster.url}/users?limit=1`).catch(() => null)),
      )
      const seconds = (Date.now() - started) / 1000
      const ok = replies.filter((reply) => reply?.status === 200).length
      const limited = replies.filter((reply) => reply?.status === 429).length
      // One bucket of 5, refilled at 5/s while the burst lasted; two instances would allow 10+.
      expect(ok).toBeLessThanOrEqual(5 + Math.ceil(seconds * 5) + 1)
      expect(ok).toBeLessThan(10)
      expect(limited).toBeGreaterThan(0)
      expect(ok + limited).toBe(30)
    })

    test('a forged X-Forwarded-For buys nothing: the rate limit and the login limiter count the real client', async () => {
      await using limited = await startCluster({
        balancer,
        balance: 'source',
        flags: ['--rate-limit', '5/s'],
      })
      const forged = (i: number) => ({ 'x-forwarded-for': `203.0.113.${i % 250}` })
      const started = Date.now()
      const replies = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          fetch(`${limited.url}/users?limit=1`, { headers: forged(i) }).catch(() => null),
        ),
      )
      const seconds = (Date.now() - started) / 1000
      const ok = replies.filter((reply) => reply?.status === 200).length
      expect(ok).toBeLessThanOrEqual(5 + Math.ceil(seconds * 5) + 1)
      expect(ok).toBeLessThan(10)

      await using cluster = await startCluster({ balancer, balance: 'source' })
      const statuses: number[] = []
      for (let i = 0; i < 60; i += 1) {
        const reply = await fetch(`${cluster.url}/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...forged(i) },
          body: JSON.stringify({ email: `guess${i}@example.com`, password: 'wrong guess' }),
        })
        statuses.push(reply.status)
      }
      // 50 failures from one client IP lock it, whatever addresses it claims to come from.
      expect(statuses.slice(0, 50)).toEqual(Array(50).fill(401))
      expect(statuses.slice(50)).toEqual(Array(10).fill(429))
    })

    test('either instance killed: at most the first request fails, then the other answers every one', async () => {
      await using cluster = await startCluster({ balancer, balance: 'source' })
      // All requests come from one address, so affinity sends them to one instance: killing
      // each in turn makes sure the one they were going to is among them.
      for (const victim of [0, 1]) {
        await cluster.kill(victim)
        const statuses: number[] = []
        for (let i = 0; i < 10; i += 1) {
          statuses.push((await fetch(`${cluster.url}/users?limit=1`)).status)
        }
        // Neither balancer re-sends a request (docs/several-instances.md): the first one sent to the dead instance
        // before it is marked down fails with 502 or 503, and only that one.
        expect([200, 502, 503]).toContain(statuses[0] as number)
        expect(statuses.slice(1)).toEqual(Array(9).fill(200))
        await cluster.restart(victim)
        // Back in the balancer's view: haproxy's health check passes once (inter 500ms, rise 1);
        // nginx checks passively and tries a failed server again after its fail_timeout (10s,
        // counted in whole seconds: up to 11).
        await Bun.sleep(balancer === 'nginx' ? 12_000 : 1_500)
      }
    })

    test('a bucket outage keeps the instances in the balancer: uploads 503, everything else answers', async () => {
      const s3 = await startS3({ reapWith: process.pid })
      try {
        await using cluster = await startCluster({
          balancer,
          balance: 'roundrobin',
          bucket: { storage: { bucket: s3.bucket, prefix: 'outage' }, env: s3.env },
        })
        s3.stop()
        // Long enough for haproxy's health check to have run several times (inter 500ms).
        await Bun.sleep(2_500)
        const health = await fetch(`${cluster.url}/health`)
        expect(health.status).toBe(503)
        const statuses: number[] = []
        for (let i = 0; i < 10; i += 1) {
          statuses.push((await fetch(`${cluster.url}/users?limit=1`)).status)
        }
        expect(statuses).toEqual(Array(10).fill(200))
        const upload = await fetch(`${cluster.url}/upload?filename=a.txt`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: 'hello',
        })
        expect(upload.status).toBe(503)
        expect(((await upload.json()) as { error: { code: string } }).error.code).toBe(
          'SERVICE_UNAVAILABLE',
        )
      } finally {
        s3.remove()
      }
    })
  })
}
