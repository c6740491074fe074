import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import type { Deps } from '../../src/deps'
import { IDEMPOTENCY_TTL_MS, once } from '../../src/idempotency/store'
import { ManualClock } from '../../src/timers'
import { twoInstances } from '../helpers/stores'

// The idempotency store's contract, on SQLite (npm test) and PostgreSQL with two instances
// (npm run test:postgres): a key claimed in the unit of work that does the work.

const SCOPE = 'anonymous:POST /users'

/** POST /users with an Idempotency-Key, as the route runs it: claim, create, complete, one unit. */
function createOnce(on: Deps, key: string, email: string) {
  const claim = { scope: SCOPE, key, fingerprint: on.idempotency.fingerprint({ email }) }
  return on.transaction((tx) =>
    once(tx.idempotency, claim, async () => {
      const user = await tx.users.create({ name: 'N', email, passwordHash: null }, SYSTEM)
      return { status: 201, body: JSON.stringify({ id: user.id }), location: `/users/${user.id}` }
    }),
  )
}

describe('idempotency store contract (two instances where the backend is shared)', () => {
  test('the same key sent to both at once: one user, one replay of the same answer', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T12:00:00Z'))
    await using env = await twoInstances(clock)
    const { a, b } = env
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
    const fingerprint = b.idempotency.fingerprint({ email: 'r0@example.com' })
    expect((await b.idempotency.lookup(SCOPE, 'key-0', fingerprint))?.status).toBe(201)
    await expect(
      b.idempotency.lookup(SCOPE, 'key-0', b.idempotency.fingerprint({ email: 'other' })),
    ).rejects.toMatchObject({ errorCode: 'CONFLICT' })
    // After 24 h the key is free again; the purge (safe on every instance at once) deletes it.
    clock.advance(IDEMPOTENCY_TTL_MS + 1)
    expect((await createOnce(a, 'key-0', 'later@example.com')).replayed).toBe(false)
    await Promise.all([a.idempotency.purgeExpired(), b.idempotency.purgeExpired()])
    expect(
      await b.idempotency.lookup(
        SCOPE,
        'key-1',
        b.idempotency.fingerprint({ email: 'r1@example.com' }),
      ),
    ).toBeNull()
    expect(
      (
        await a.idempotency.lookup(
          SCOPE,
          'key-0',
          a.idempotency.fingerprint({ email: 'later@example.com' }),
        )
      )?.status,
    ).toBe(201)
  })

  test('a unit that fails releases its claim: the next request with the key does the work', async () => {
    await using env = await twoInstances()
    const { a } = env
    await a.users.create({ name: 'Taken', email: 'taken@example.com', passwordHash: null }, SYSTEM)
    await expect(createOnce(a, 'k', 'taken@example.com')).rejects.toMatchObject({
      errorCode: 'CONFLICT',
    })
    expect(
      await a.idempotency.lookup(
        SCOPE,
        'k',
        a.idempotency.fingerprint({ email: 'taken@example.com' }),
      ),
    ).toBeNull()
    expect((await createOnce(a, 'k', 'free@example.com')).replayed).toBe(false)
  })
})
