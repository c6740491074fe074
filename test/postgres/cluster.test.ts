import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { runBinary } from '../helpers/binary'
import { type Cluster, startCluster, until } from '../helpers/cluster'
import { queryOnce } from '../helpers/postgres'
import { STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

// Several instances of the compiled binary on one PostgreSQL database and one bucket, behind
// haproxy (Debian's `haproxy`) on loopback: each point of "correct with several instances".
// Requests meant for one instance go to it directly; the rest go through the balancer.

setDefaultTimeout(60_000)

const PASSWORD = 'correct horse battery staple'

async function call(
  base: string,
  method: string,
  path: string,
  init: { json?: unknown; headers?: Record<string, string>; body?: string } = {},
) {
  const headers: Record<string, string> = { ...init.headers }
  let body = init.body
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(init.json)
  }
  const response = await fetch(`${base}${path}`, { method, headers, body })
  const text = await response.text()
  let json: unknown = null
  try {
    json = JSON.parse(text)
  } catch {}
  // biome-ignore lint/suspicious/noExplicitAny: test replies are read loosely
  return { status: response.status, headers: response.headers, body: json as any }
}

const urls = (cluster: Cluster) => cluster.instances.map((instance) => instance.url)

const query = <T>(cluster: Cluster, text: string) => queryOnce<T>(cluster.databaseUrl, text)

describe('two instances on one database, behind haproxy', () => {
  test('writes: If-Match, Idempotency-Key and one email, raced one to each instance', async () => {
    await using cluster = await startCluster()
    const [a, b] = urls(cluster) as [string, string]
    const created = await call(cluster.url, 'POST', '/users', {
      json: { name: 'Ada', email: 'ada@example.com' },
    })
    expect(created.status).toBe(201)
    const etag = created.headers.get('etag') as string
    const path = `/users/${created.body.id}`
    for (let round = 0; round < 5; round += 1) {
      const current = await call(cluster.url, 'GET', path)
      const tag = current.headers.get('etag') as string
      const puts = await Promise.all(
        [a, b].map((base, i) =>
          call(base, 'PUT', path, {
            json: { name: `Writer ${i} round ${round}`, email: 'ada@example.com' },
            headers: { 'if-match': tag },
          }),
        ),
      )
      expect(puts.map((reply) => reply.status).sort()).toEqual([200, 412])
    }
    expect(etag).not.toBe((await call(cluster.url, 'GET', path)).headers.get('etag'))

    for (let round = 0; round < 5; round += 1) {
      const key = `order-${round}-${crypto.randomUUID()}`
      const json = { name: 'Idem', email: `idem${round}@example.com` }
      const replies = await Promise.all(
        [a, b].map((base) =>
          call(base, 'POST', '/users', { json, headers: { 'idempotency-key': key } }),
        ),
      )
      const statuses = replies.map((reply) => reply.status)
      // One creates; the other replays its answer (or, still in flight, is told to retry).
      expect(statuses).toContain(201)
      const replayed = replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')
      const inFlight = replies.filter((r) => r.status === 409)
      expect(replayed.length + inFlight.length).toBe(1)
      if (replayed[0] !== undefined) expect(replayed[0].body.id).toBe(replies[0]?.body.id)
      const rows = await query<{ n: number }>(
        cluster,
        `SELECT count(*)::int AS n FROM users WHERE email = 'idem${round}@example.com'`,
      )
      expect(rows[0]?.n).toBe(1)
    }

    for (let round = 0; round < 5; round += 1) {
      const replies = await Promise.all([
        call(a, 'POST', '/users', { json: { name: 'A', email: `Race${round}@Example.com` } }),
        call(b, 'POST', '/users', { json: { name: 'B', email: `race${round}@example.COM` } }),
      ])
      expect(replies.map((reply) => reply.status).sort()).toEqual([201, 409])
      const conflict = replies.find((reply) => reply.status === 409)
      expect(conflict?.body.error.code).toBe('CONFLICT')
    }
  })

  test('credentials: logout, key revocation and a password change on one are refused on the other at once', async () => {
    await using cluster = await startCluster()
    const [a, b] = urls(cluster) as [string, string]
    const user = await call(a, 'POST', '/users', {
      json: { name: 'Grace', email: 'grace@example.com', password: PASSWORD },
    })
    expect(user.status).toBe(201)
    const login = await call(a, 'POST', '/login', {
      json: { email: 'grace@example.com', password: PASSWORD },
    })
    const cookie = (login.headers.get('set-cookie') ?? '').split(';', 1)[0] as string
    const token = login.body.access_token as string
    expect((await call(b, 'GET', '/me', { headers: { cookie } })).status).toBe(200)
    expect(
      (await call(b, 'GET', '/me', { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(200)
    expect((await call(a, 'POST', '/logout', { headers: { cookie } })).status).toBe(204)
    expect((await call(b, 'GET', '/me', { headers: { cookie } })).status).toBe(401)
    expect(
      (await call(b, 'POST', '/logout', { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(204)
    expect(
      (await call(a, 'GET', '/me', { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(401)

    const keyFor = async (name: string) =>
      (
        await runBinary(['keys', 'create', '--name', name, ...cluster.cliFlags], {
          env: cluster.env,
        })
      ).stdout.trim()
    const admin = await keyFor('admin')
    const doomed = await keyFor('doomed')
    expect((await call(b, 'GET', '/data', { headers: { 'x-api-key': doomed } })).status).toBe(200)
    const keys = await call(a, 'GET', '/api-keys', { headers: { 'x-api-key': admin } })
    const doomedId = keys.body.data.find((k: { name: string }) => k.name === 'doomed').id
    expect(
      (await call(a, 'DELETE', `/api-keys/${doomedId}`, { headers: { 'x-api-key': admin } }))
        .status,
    ).toBe(200)
    const refused = await call(b, 'GET', '/data', { headers: { 'x-api-key': doomed } })
    expect(refused.status).toBe(401)

    // Basic: B has checked (and cached) the old password; a change on A ends it on B.
    const basic = (password: string) => ({
      authorization: `Basic ${Buffer.from(`grace@example.com:${password}`).toString('base64')}`,
    })
    expect((await call(b, 'GET', '/secure', { headers: basic(PASSWORD) })).status).toBe(200)
    expect((await call(b, 'GET', '/secure', { headers: basic(PASSWORD) })).status).toBe(200)
    const changed = await call(a, 'PATCH', `/users/${user.body.id}`, {
      json: { password: 'a new and longer passphrase', current_password: PASSWORD },
      headers: basic(PASSWORD),
    })
    expect(changed.status).toBe(200)
    expect((await call(b, 'GET', '/secure', { headers: basic(PASSWORD) })).status).toBe(401)
    const fresh = basic('a new and longer passphrase')
    expect((await call(b, 'GET', '/secure', { headers: fresh })).status).toBe(200)
    // An email change on A: B's cache forgets the old address at once.
    const moved = await call(a, 'PATCH', `/users/${user.body.id}`, {
      json: { email: 'grace.h@example.com', current_password: 'a new and longer passphrase' },
      headers: fresh,
    })
    expect(moved.status).toBe(200)
    expect((await call(b, 'GET', '/secure', { headers: fresh })).status).toBe(401)
  })

  test('the login limiter is shared: 10 failures spread over both lock the address on both', async () => {
    await using cluster = await startCluster()
    const [a, b] = urls(cluster) as [string, string]
    await call(a, 'POST', '/users', {
      json: { name: 'Lin', email: 'lin@example.com', password: PASSWORD },
    })
    for (let i = 0; i < 10; i += 1) {
      const reply = await call(i % 2 === 0 ? a : b, 'POST', '/login', {
        json: { email: 'lin@example.com', password: `wrong ${i}` },
      })
      expect(reply.status).toBe(401)
    }
    for (const base of [a, b]) {
      const locked = await call(base, 'POST', '/login', {
        json: { email: 'lin@example.com', password: PASSWORD },
      })
      expect(locked.status).toBe(429)
      expect(locked.body.error.code).toBe('RATE_LIMITED')
      expect(locked.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
    }
  })

  test('the login limiter is one budget: 200 concurrent wrong guesses over both instances check at most 10 passwords', async () => {
    await using cluster = await startCluster()
    const [a, b] = urls(cluster) as [string, string]
    await call(a, 'POST', '/users', {
      json: { name: 'Lin', email: 'lin@example.com', password: PASSWORD },
    })
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(i % 2 === 0 ? a : b, 'POST', '/login', {
          json: { email: 'lin@example.com', password: `wrong ${i}` },
        }),
      ),
    )
    const statuses = replies.map((reply) => reply.status)
    // A 401 is a password that was checked; every other guess was refused before argon2 ran.
    const checked = statuses.filter((status) => status === 401).length
    expect(checked).toBeLessThanOrEqual(10)
    expect(checked).toBeGreaterThan(0)
    expect(statuses.filter((status) => status === 429).length).toBe(200 - checked)
    const locked = await call(b, 'POST', '/login', {
      json: { email: 'lin@example.com', password: PASSWORD },
    })
    expect(locked.status).toBe(429)
  })

  test('one webhook event delivered to both at once is stored once and handled once, by one worker', async () => {
    await using cluster = await startCluster({ env: { ROSTER_WEBHOOK_SECRET: STRIPE_SECRET } })
    const [a, b] = urls(cluster) as [string, string]
    const bodies = Array.from({ length: 10 }, (_, i) =>
      JSON.stringify({
        id: `evt_cluster_${i}`,
        type: 'customer.created',
        data: { object: { email: `hook${i}@example.com`, name: `Hook ${i}` } },
      }),
    )
    for (const body of bodies) {
      const headers = await stripeHeaders(body)
      const replies = await Promise.all(
        [a, b].map((base) => call(base, 'POST', '/webhooks', { body, headers })),
      )
      expect(replies.map((reply) => reply.status)).toEqual([200, 200])
    }
    await until(async () => {
      const rows = await query<{ n: number }>(
        cluster,
        "SELECT count(*)::int AS n FROM webhook_events WHERE status = 'processed'",
      )
      return rows[0]?.n === 10
    })
    const events = await query<{ event_id: string; attempts: number; status: string }>(
      cluster,
      'SELECT event_id, attempts, status FROM webhook_events ORDER BY event_id',
    )
    expect(events).toHaveLength(10)
    for (const row of events) expect(row).toMatchObject({ attempts: 1, status: 'processed' })
    const users = await query<{ n: number }>(
      cluster,
      "SELECT count(*)::int AS n FROM users WHERE email LIKE 'hook%@example.com'",
    )
    expect(users[0]?.n).toBe(10)
  }, 90_000)

  test('uploads through the balancer: stored once in the bucket, read back from either instance', async () => {
    await using cluster = await startCluster()
    const body = 'x'.repeat(3 * 1024 * 1024)
    const upload = await call(cluster.url, 'POST', '/upload?filename=big.txt&public=true', {
      body,
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(upload.status).toBe(201)
    const file = upload.body.files[0]
    for (const base of urls(cluster)) {
      const whole = await fetch(`${base}/files/${file.id}`)
      expect(whole.headers.get('etag')).toBe(`"${file.sha256}"`)
      expect((await whole.text()).length).toBe(body.length)
      const part = await fetch(`${base}/files/${file.id}`, { headers: { range: 'bytes=10-19' } })
      expect(part.status).toBe(206)
      expect(await part.text()).toBe('x'.repeat(10))
    }
  })

  test('roles: a demotion on one instance holds on the other at once; two admins demoting each other leave one', async () => {
    await using cluster = await startCluster({ flags: ['--users-access', 'protected'] })
    const [a, b] = urls(cluster) as [string, string]
    for (const email of ['ada@example.com', 'bo@example.com']) {
      const made = await runBinary(
        [
          'users',
          'create',
          '--role',
          'admin',
          '--name',
          'Admin',
          '--email',
          email,
          '--password-stdin',
          ...cluster.cliFlags,
        ],
        { env: cluster.env, stdin: `${PASSWORD}\n` },
      )
      expect(made.code).toBe(0)
    }
    const signIn = async (base: string, email: string) => {
      const login = await call(base, 'POST', '/login', { json: { email, password: PASSWORD } })
      return { authorization: `Bearer ${login.body.access_token}` }
    }
    const asAda = await signIn(a, 'ada@example.com')
    const asBo = await signIn(b, 'bo@example.com')
    expect((await call(b, 'GET', '/users', { headers: asAda })).status).toBe(200)

    // Each demotes the other at the same moment, one request to each instance.
    const replies = await Promise.all([
      call(a, 'PATCH', '/users/2', { json: { role: 'member' }, headers: asAda }),
      call(b, 'PATCH', '/users/1', { json: { role: 'member' }, headers: asBo }),
    ])
    const statuses = replies.map((reply) => reply.status)
    // The first demotion ends the demoted admin's token: the other request is then refused as
    // no longer signed in (401), or reaches the last admin (409). Never both succeed.
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.some((status) => status === 401 || status === 409)).toBe(true)
    const admins = await query<{ n: number }>(
      cluster,
      "SELECT count(*)::int AS n FROM users WHERE role = 'admin'",
    )
    expect(admins[0]?.n).toBe(1)
    const demoted = replies[0]?.status === 200 ? asBo : asAda
    for (const base of [a, b]) {
      expect((await call(base, 'GET', '/me', { headers: demoted })).status).toBe(401)
    }

    // A scoped key revoked on one instance is refused on the other at once.
    const survivor = replies[0]?.status === 200 ? asAda : asBo
    const key = await call(a, 'POST', '/api-keys', {
      json: { name: 'r', scopes: ['users:read'] },
      headers: survivor,
    })
    expect(key.body.scopes).toEqual(['users:read'])
    expect(
      (await call(b, 'GET', '/users', { headers: { 'x-api-key': key.body.key } })).status,
    ).toBe(200)
    expect(
      (
        await call(b, 'POST', '/users', {
          json: { name: 'x', email: 'x@example.com' },
          headers: { 'x-api-key': key.body.key },
        })
      ).status,
    ).toBe(403)
    expect(
      (await call(a, 'DELETE', `/api-keys/${key.body.id}`, { headers: survivor })).status,
    ).toBe(200)
    expect(
      (await call(b, 'GET', '/users', { headers: { 'x-api-key': key.body.key } })).status,
    ).toBe(401)
  })
})
