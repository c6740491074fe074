import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { createPgUserStore } from '../../src/backends/postgres/users'
import type { AppError } from '../../src/errors/errors'
import { freshDatabase } from '../helpers/postgres'

const now = () => new Date('2026-11-23T12:00:00.000Z')

/** Two instances' users stores (a pool each) on one fresh, migrated database. */
async function twoInstances() {
  const database = await freshDatabase()
  const pools = [new SQL(database.url, { max: 4 }), new SQL(database.url, { max: 4 })] as const
  await runPgMigrations(pools[0])
  const [a, b] = pools.map((pool) => createPgUserStore(pool, now)) as [
    ReturnType<typeof createPgUserStore>,
    ReturnType<typeof createPgUserStore>,
  ]
  return {
    a,
    b,
    sql: pools[0],
    async [Symbol.asyncDispose]() {
      await Promise.all(pools.map((pool) => pool.close()))
      await database[Symbol.asyncDispose]()
    },
  }
}

const codeOf = (outcome: PromiseSettledResult<unknown>) =>
  outcome.status === 'fulfilled' ? 'ok' : ((outcome.reason as AppError).errorCode ?? 'error')

describe('users on PostgreSQL, two instances', () => {
  test('two PUTs with the same If-Match, one on each instance: exactly one wins, the other is 412', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 10; round++) {
      const user = await env.a.create({
        name: 'Ada',
        email: `ada${round}@example.com`,
        passwordHash: null,
      })
      const outcomes = await Promise.allSettled([
        env.a.update(user.id, { name: 'From A' }, { versions: [user.version] }),
        env.b.update(user.id, { name: 'From B' }, { versions: [user.version] }),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['PRECONDITION_FAILED', 'ok'])
      const stored = await env.b.get(user.id)
      expect(stored?.version).toBe(user.version + 1)
    }
  })

  test('the same email in another case, created on both at once: one user, one CONFLICT', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.allSettled([
        env.a.create({ name: 'A', email: `Grace${round}@Example.com`, passwordHash: null }),
        env.b.create({ name: 'B', email: `grace${round}@example.COM`, passwordHash: null }),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['CONFLICT', 'ok'])
    }
    expect(await env.a.count()).toBe(10)
  })

  test('a DELETE racing a PUT with the same If-Match: one of them, never both', async () => {
    await using env = await twoInstances()
    const user = await env.a.create({ name: 'Lin', email: 'lin@example.com', passwordHash: null })
    const outcomes = await Promise.allSettled([
      env.a.remove(user.id, { versions: [user.version] }),
      env.b.update(user.id, { name: 'Late' }, { versions: [user.version] }),
    ])
    const codes = outcomes.map(codeOf)
    expect(codes.filter((code) => code === 'ok')).toHaveLength(1)
    expect(
      codes.filter((code) => code === 'PRECONDITION_FAILED' || code === 'NOT_FOUND'),
    ).toHaveLength(1)
  })

  test('reads: get, a page with its total, sign-in lookups', async () => {
    await using env = await twoInstances()
    for (let i = 1; i <= 5; i++) {
      await env.a.create({
        name: ` User ${i} `,
        email: `u${i}@Example.com`,
        passwordHash: i === 1 ? 'hash' : null,
      })
    }
    const page = await env.b.list({ limit: 2, offset: 2 })
    expect(page.total).toBe(5)
    expect(page.data.map((user) => user.name)).toEqual(['User 3', 'User 4'])
    expect(Object.keys(page.data[0] as object).sort()).toEqual([
      'created_at',
      'email',
      'id',
      'name',
      'updated_at',
    ])
    expect(await env.b.list({ limit: 2, offset: 10 })).toEqual({ data: [], total: 5 })
    expect(await env.b.byEmail('U1@EXAMPLE.COM')).toEqual({ id: 1, passwordHash: 'hash' })
    expect((await env.b.withPasswordHash(1))?.passwordHash).toBe('hash')
    expect(await env.b.get(99)).toBeNull()
    expect(await env.b.idByEmail('u2@example.com')).toBe(2)
    expect(await env.b.emailsTaken(['U3@example.com', 'nobody@example.com'])).toEqual(
      new Set(['u3@example.com']),
    )
  })

  test('a new password ends the user’s sessions and tokens in the same transaction', async () => {
    await using env = await twoInstances()
    const user = await env.a.create({ name: 'Sam', email: 'sam@example.com', passwordHash: 'old' })
    await env.sql`INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES ('s', ${user.id}, 0, ${Date.now() + 1e6})`
    await env.sql`INSERT INTO access_tokens (id, user_id, created_at, expires_at) VALUES ('t', ${user.id}, 0, ${Date.now() + 1e6})`
    await env.b.update(user.id, { passwordHash: 'new' }, { versions: null })
    const [left] =
      await env.sql`SELECT (SELECT count(*)::int FROM sessions) + (SELECT count(*)::int FROM access_tokens) AS n`
    expect(left.n).toBe(0)
  })

  test('If-Match, echo and missing rows answer like SQLite', async () => {
    await using env = await twoInstances()
    const user = await env.a.create({ name: 'Eve', email: 'eve@example.com', passwordHash: null })
    await expect(
      env.a.update(user.id, { name: 'x' }, { versions: [user.version + 5] }),
    ).rejects.toMatchObject({ errorCode: 'PRECONDITION_FAILED' })
    await expect(
      env.a.update(user.id, { name: 'x' }, { versions: null, echo: { id: user.id + 1 } }),
    ).rejects.toMatchObject({ errorCode: 'VALIDATION_ERROR' })
    await expect(env.a.remove(999, { versions: null })).rejects.toMatchObject({
      errorCode: 'NOT_FOUND',
    })
    const other = await env.a.create({ name: 'Mo', email: 'mo@example.com', passwordHash: null })
    await expect(
      env.b.update(other.id, { email: 'EVE@example.com' }, { versions: null }),
    ).rejects.toMatchObject({ errorCode: 'CONFLICT' })
    expect((await env.a.get(user.id))?.version).toBe(1)
  })

  test('export reads one snapshot in batches; import reports conflicts, all or nothing on request', async () => {
    await using env = await twoInstances()
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      name: `N${i}`,
      email: `n${i}@example.com`,
      passwordHash: null,
    }))
    expect(await env.a.insertMany(rows, { allOrNothing: false })).toEqual({
      inserted: 2500,
      conflicts: [],
    })
    const again = [
      { name: 'New', email: 'fresh@example.com', passwordHash: null },
      rows[0] as (typeof rows)[0],
    ]
    expect(await env.a.insertMany(again, { allOrNothing: true })).toEqual({
      inserted: 0,
      conflicts: [1],
    })
    expect(await env.a.idByEmail('fresh@example.com')).toBeNull()
    const batches: number[] = []
    let seen = 0
    for await (const batch of env.b.exportAll()) {
      if (batches.length === 0)
        await env.a.create({ name: 'During', email: 'during@example.com', passwordHash: null })
      batches.push(batch.length)
      seen += batch.length
    }
    expect(batches).toEqual([1000, 1000, 500])
    expect(seen).toBe(2500)
  })
})

describe('the v2 search on PostgreSQL', () => {
  test('filters, offsets and cursors both ways, as on SQLite', async () => {
    await using env = await twoInstances()
    for (let i = 1; i <= 30; i++) {
      const name = i % 3 === 0 ? `Team_${i}` : `Solo ${i}`
      await env.a.create({ name, email: `p${i}@example.com`, passwordHash: null })
    }
    const first = await env.b.search({ limit: 4, offset: 0, filters: { q: 'team_' } })
    expect(first.total).toBe(10)
    expect(first.data.map((user) => user.id)).toEqual([3, 6, 9, 12])
    expect(first.next).toEqual({ direction: 'after', id: 12 })
    expect(first.prev).toBeNull()
    // `_` is literal, not a wildcard: "Solo 1_" matches nothing.
    expect((await env.b.search({ limit: 4, offset: 0, filters: { q: 'o_1' } })).total).toBe(0)
    const second = await env.b.search({
      limit: 4,
      offset: 0,
      cursor: { direction: 'after', id: 12 },
      filters: { q: 'TEAM' },
    })
    expect(second.data.map((user) => user.id)).toEqual([15, 18, 21, 24])
    expect(second.prev).toEqual({ direction: 'before', id: 15 })
    expect(second.offset).toBeNull()
    const back = await env.b.search({
      limit: 4,
      offset: 0,
      cursor: { direction: 'before', id: 15 },
      filters: { q: 'team' },
    })
    expect(back.data.map((user) => user.id)).toEqual([3, 6, 9, 12])
    expect(back.prev).toBeNull()
    const last = await env.b.search({ limit: 4, offset: 8, filters: { q: 'team' } })
    expect(last.data.map((user) => user.id)).toEqual([27, 30])
    expect(last.next).toBeNull()
    expect(last.prev).toEqual({ offset: 4 })
    const byEmail = await env.b.search({
      limit: 5,
      offset: 0,
      filters: { email: 'P7@EXAMPLE.com' },
    })
    expect(byEmail.data.map((user) => user.id)).toEqual([7])
  })
})
