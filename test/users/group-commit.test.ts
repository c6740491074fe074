import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { expectEnvelope, makeTestApp } from '../helpers/app'

const user = (i: number) => ({ name: `User ${i}`, email: `user${i}@example.com` })

describe('writes through the group commit', () => {
  test('32 concurrent creates share a few commits; every 201 is stored', async () => {
    await using t = await makeTestApp()
    const commitsBefore = t.deps.metrics.dbCommits.get()
    const replies = await Promise.all(
      Array.from({ length: 32 }, (_, i) => t.post('/users', user(i))),
    )
    expect(replies.map((reply) => reply.status)).toEqual(Array(32).fill(201))
    const commits = t.deps.metrics.dbCommits.get() - commitsBefore
    expect(commits).toBeGreaterThanOrEqual(1)
    expect(commits).toBeLessThan(32)
    expect((await t.get('/users?limit=100')).body.pagination.total).toBe(32)
    const metrics = (await t.get('/metrics')).text
    expect(metrics).toMatch(/^roster_db_commits_total \d+$/m)
    expect(metrics).toMatch(/^roster_db_writes_total \d+$/m)
  })

  test('a duplicate email in the same batch is 409 alone; the others are created', async () => {
    await using t = await makeTestApp()
    const replies = await Promise.all([
      t.post('/users', user(1)),
      t.post('/users', { name: 'Twin', email: 'USER1@example.com' }),
      t.post('/users', user(2)),
    ])
    expect(replies[0]?.status).toBe(201)
    expectEnvelope(replies[1] as never, 409, 'CONFLICT')
    expect(replies[2]?.status).toBe(201)
    const stored = (await t.get('/users')).body.data.map((row: { email: string }) => row.email)
    expect(stored).toEqual(['user1@example.com', 'user2@example.com'])
  })

  test('If-Match failures and successes on one record in one batch: one wins, one is 412', async () => {
    await using t = await makeTestApp()
    const created = await t.post('/users', user(1))
    const etag = created.headers.get('etag') ?? `"${created.body.id}.1"`
    const path = `/users/${created.body.id}`
    const [first, second] = await Promise.all([
      t.call('PATCH', path, { json: { name: 'First' }, headers: { 'if-match': etag } }),
      t.call('PATCH', path, { json: { name: 'Second' }, headers: { 'if-match': etag } }),
    ])
    expect([first?.status, second?.status].sort()).toEqual([200, 412])
    const winner = first?.status === 200 ? 'First' : 'Second'
    expect((await t.get(path)).body.name).toBe(winner)
  })

  test('reads answered while a batch is open see only committed rows', async () => {
    await using t = await makeTestApp()
    await t.post('/users', user(1))
    // Open a batch by hand, as a write of this turn would, and read before it commits.
    const pending = t.deps.users.create({ ...user(2), passwordHash: null }, SYSTEM)
    const list = await t.get('/users')
    expect(list.body.pagination.total).toBe(1)
    expect((await t.get('/users/2')).status).toBe(404)
    await pending
    expect((await t.get('/users')).body.pagination.total).toBe(2)
  })

  test('an Idempotency-Key sent twice in one batch does the work once', async () => {
    await using t = await makeTestApp()
    const headers = { 'idempotency-key': 'same-key' }
    const [a, b] = await Promise.all([
      t.post('/users', user(1), { headers }),
      t.post('/users', user(1), { headers }),
    ])
    expect(a?.status).toBe(201)
    expect(b?.status).toBe(201)
    expect(a?.body).toEqual(b?.body)
    expect([
      a?.headers.get('idempotent-replayed'),
      b?.headers.get('idempotent-replayed'),
    ]).toContain('true')
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })
})
