import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { createPgIdempotencyStore } from '../../src/backends/postgres/idempotency'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { createPgUserStore } from '../../src/backends/postgres/users'
import { IDEMPOTENCY_TTL_MS, once } from '../../src/idempotency/store'
import { freshDatabase } from '../helpers/postgres'

const date = () => new Date('2026-11-23T12:00:00.000Z')

async function instance(url: string, clock: () => number) {
  const pool = new SQL(url, { max: 4 })
  return {
    pool,
    users: createPgUserStore(pool, date),
    idempotency: await createPgIdempotencyStore(pool, clock),
  }
}

type Instance = Awaited<ReturnType<typeof instance>>

/** POST /users with an Idempotency-Key, as the route runs it: claim, create, complete, one unit. */
function createOnce(on: Instance, key: string, email: string) {
  const claim = {
    scope: 'anonymous:POST /users',
    key,
    fingerprint: on.idempotency.fingerprint({ email }),
  }
  return on.pool.begin((tx) =>
    once(on.idempotency.inUnit(tx), claim, async () => {
      const user = await on.users.inUnit(tx).create({ name: 'N', email, passwordHash: null })
      return { status: 201, body: JSON.stringify({ id: user.id }), location: `/users/${user.id}` }
    }),
  )
}

describe('idempotency keys on PostgreSQL, two instances', () => {
  test('the same key sent to both at once: one user, one replay of the same answer', async () => {
    await using database = await freshDatabase()
    let at = Date.parse('2026-11-23T12:00:00Z')
    const clock = () => at
    const setup = new SQL(database.url)
    await runPgMigrations(setup)
    await setup.close()
    const [a, b] = [await instance(database.url, clock), await instance(database.url, clock)]
    try {
      expect(a.idempotency.fingerprint({ email: 'x' })).toBe(
        b.idempotency.fingerprint({ email: 'x' }),
      )
      for (let round = 0; round < 10; round++) {
        const [first, second] = await Promise.all([
          createOnce(a, `key-${round}`, `r${round}@example.com`),
          createOnce(b, `key-${round}`, `r${round}@example.com`),
        ])
        expect([first.replayed, second.replayed].sort()).toEqual([false, true])
        expect(first.answer).toEqual(second.answer)
      }
      expect(await a.users.count()).toBe(10)
      // A committed answer is found before any work; another body under the key is CONFLICT.
      expect(
        (
          await b.idempotency.lookup(
            'anonymous:POST /users',
            'key-0',
            b.idempotency.fingerprint({ email: 'r0@example.com' }),
          )
        )?.status,
      ).toBe(201)
      await expect(
        b.idempotency.lookup(
          'anonymous:POST /users',
          'key-0',
          b.idempotency.fingerprint({ email: 'other' }),
        ),
      ).rejects.toMatchObject({ errorCode: 'CONFLICT' })
      // After 24 h the key is free again; the purge (safe on every instance at once) deletes it.
      at += IDEMPOTENCY_TTL_MS + 1
      expect((await createOnce(a, 'key-0', 'later@example.com')).replayed).toBe(false)
      await Promise.all([a.idempotency.purgeExpired(), b.idempotency.purgeExpired()])
      const [left] = await a.pool`SELECT count(*)::int AS n FROM idempotency_keys`
      expect(left.n).toBe(1)
    } finally {
      await Promise.all([a.pool.close(), b.pool.close()])
    }
  })

  test('a unit that fails releases its claim: the next request with the key does the work', async () => {
    await using database = await freshDatabase()
    const clock = () => Date.parse('2026-11-23T12:00:00Z')
    const setup = new SQL(database.url)
    await runPgMigrations(setup)
    await setup.close()
    const a = await instance(database.url, clock)
    try {
      await a.users.create({ name: 'Taken', email: 'taken@example.com', passwordHash: null })
      await expect(createOnce(a, 'k', 'taken@example.com')).rejects.toMatchObject({
        errorCode: 'CONFLICT',
      })
      const [rows] = await a.pool`SELECT count(*)::int AS n FROM idempotency_keys`
      expect(rows.n).toBe(0)
      expect((await createOnce(a, 'k', 'free@example.com')).replayed).toBe(false)
    } finally {
      await a.pool.close()
    }
  })
})
