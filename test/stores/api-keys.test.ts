import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { ManualClock } from '../../src/timers'
import { twoInstances } from '../helpers/stores'

// The API key store's contract, on SQLite (npm test) and on PostgreSQL with two instances
// (npm run test:postgres). See test/helpers/stores.ts.

describe('API key store contract (two instances where the backend is shared)', () => {
  test('a key made on one instance authenticates on the other; only its prefix is kept', async () => {
    await using env = await twoInstances()
    const created = await env.a.apiKeys.create({ name: 'ci', scopes: ['*'] }, SYSTEM)
    expect(created.key).toMatch(/^rk_[A-Za-z0-9_-]{43}$/)
    expect(created.key.startsWith(created.prefix)).toBe(true)
    expect(await env.b.apiKeys.authenticate(created.key)).toEqual({
      id: created.id,
      name: 'ci',
      scopes: ['*'],
      expiresAt: null,
      createdByUser: null,
    })
    for (const wrong of ['', 'rk_short', `${created.key}x`, created.key.replace('rk_', 'rt_')]) {
      expect(await env.b.apiKeys.authenticate(wrong)).toBeNull()
    }
  })

  test('a use is recorded (last_used_at) without anyone waiting for it', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T12:00:00Z'))
    await using env = await twoInstances(clock)
    const created = await env.a.apiKeys.create({ name: 'ci', scopes: ['*'] }, SYSTEM)
    expect((await env.a.apiKeys.list({ limit: 10, offset: 0 })).data[0]?.last_used_at).toBeNull()
    await env.b.apiKeys.authenticate(created.key)
    const deadline = Date.now() + 5000
    let lastUsed: string | null | undefined = null
    while (lastUsed === null && Date.now() < deadline) {
      lastUsed = (await env.a.apiKeys.list({ limit: 10, offset: 0 })).data[0]?.last_used_at
      if (lastUsed === null) await Bun.sleep(10)
    }
    expect(lastUsed).toBe('2026-11-23T12:00:00.000Z')
  })

  test('the list is the active keys, oldest first (or newest), paged with its total', async () => {
    await using env = await twoInstances()
    const made = []
    for (const name of ['one', 'two', 'three'])
      made.push(await env.a.apiKeys.create({ name: name, scopes: ['*'] }, SYSTEM))
    await env.a.apiKeys.revoke(made[1]?.id as number, SYSTEM)
    const page = await env.b.apiKeys.list({ limit: 1, offset: 1 })
    expect(page.total).toBe(2)
    expect(page.data.map((key) => key.name)).toEqual(['three'])
    const newest = await env.b.apiKeys.list({ limit: 10, offset: 0, first: 'newest' })
    expect(newest.data.map((key) => key.name)).toEqual(['three', 'one'])
    const oldest = await env.b.apiKeys.list({ limit: 1, offset: 1, first: 'oldest' })
    expect(oldest.data.map((key) => key.name)).toEqual(['three'])
    expect(JSON.stringify(page)).not.toContain(made[2]?.key as string)
  })

  test('revoking a key revokes every key made from it, at any depth, for every instance', async () => {
    await using env = await twoInstances()
    const root = await env.a.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const child = await env.a.apiKeys.create(
      { name: 'child', parentId: root.id, scopes: ['*'] },
      SYSTEM,
    )
    const grandchild = await env.b.apiKeys.create(
      {
        name: 'grandchild',
        parentId: child.id,
        scopes: ['*'],
      },
      SYSTEM,
    )
    const other = await env.a.apiKeys.create({ name: 'other', scopes: ['*'] }, SYSTEM)
    expect(await env.a.apiKeys.revoke(root.id, SYSTEM)).toBe(true)
    for (const key of [root, child, grandchild]) {
      expect(await env.b.apiKeys.authenticate(key.key)).toBeNull()
    }
    expect(await env.b.apiKeys.authenticate(other.key)).toEqual({
      id: other.id,
      name: 'other',
      scopes: ['*'],
      expiresAt: null,
      createdByUser: null,
    })
    expect(await env.b.apiKeys.revoke(root.id, SYSTEM)).toBe(false)
    expect(await env.b.apiKeys.revoke(999_999, SYSTEM)).toBe(false)
  })

  test('one key revoked on both instances at once: exactly one revocation counts', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 10; round++) {
      const key = await env.a.apiKeys.create({ name: `k${round}`, scopes: ['*'] }, SYSTEM)
      const outcomes = await Promise.all([
        env.a.apiKeys.revoke(key.id, SYSTEM),
        env.b.apiKeys.revoke(key.id, SYSTEM),
      ])
      expect(outcomes.sort()).toEqual([false, true])
    }
  })

  test('a key keeps its scopes, in the contract order, and lists them with its expiry', async () => {
    await using env = await twoInstances()
    const created = await env.a.apiKeys.create(
      {
        name: 'reader',
        scopes: ['uploads:read', 'users:read', 'users:read'],
        expiresAt: '2099-01-01T00:00:00.000Z',
      },
      SYSTEM,
    )
    expect(created.scopes).toEqual(['users:read', 'uploads:read'])
    expect(created.expires_at).toBe('2099-01-01T00:00:00.000Z')
    expect((await env.b.apiKeys.authenticate(created.key))?.scopes).toEqual([
      'users:read',
      'uploads:read',
    ])
    const listed = (await env.b.apiKeys.list({ limit: 10, offset: 0 })).data[0]
    expect(listed).toMatchObject({
      scopes: ['users:read', 'uploads:read'],
      expires_at: '2099-01-01T00:00:00.000Z',
      parent_id: null,
    })
  })

  test('an expired key is refused like a revoked one, on every instance, and still listed', async () => {
    const clock = new ManualClock(Date.parse('2026-11-23T12:00:00Z'))
    await using env = await twoInstances(clock)
    const created = await env.a.apiKeys.create(
      {
        name: 'short',
        scopes: ['*'],
        expiresAt: '2026-11-23T13:00:00.000Z',
      },
      SYSTEM,
    )
    expect(await env.b.apiKeys.authenticate(created.key)).not.toBeNull()
    clock.advance(60 * 60 * 1000)
    expect(await env.a.apiKeys.authenticate(created.key)).toBeNull()
    expect(await env.b.apiKeys.authenticate(created.key)).toBeNull()
    expect((await env.b.apiKeys.list({ limit: 10, offset: 0 })).total).toBe(1)
  })

  test('a key an admin made ends for good, on every instance, when that admin is demoted, deactivated, signed out everywhere or deleted', async () => {
    await using env = await twoInstances()
    const admin = await env.a.users.create(
      { name: 'Root', email: 'root@example.com', role: 'admin', passwordHash: null },
      SYSTEM,
    )
    await env.a.users.create(
      { name: 'Other', email: 'other@example.com', role: 'admin', passwordHash: null },
      SYSTEM,
    )
    const mint = async (name: string) => {
      const made = await env.a.apiKeys.create(
        { name, scopes: ['*'], createdByUser: admin.id },
        SYSTEM,
      )
      expect(made.created_by_user).toBe(admin.id)
      expect((await env.b.apiKeys.authenticate(made.key))?.createdByUser).toBe(admin.id)
      return made
    }
    const change = (changes: object) =>
      env.b.users.update(admin.id, changes, { versions: null }, SYSTEM)
    const demoted = await mint('demoted')
    await change({ role: 'member' })
    expect(await env.a.apiKeys.authenticate(demoted.key)).toBeNull()
    await change({ role: 'admin' })
    expect(await env.a.apiKeys.authenticate(demoted.key)).toBeNull()
    const deactivated = await mint('deactivated')
    await change({ active: false })
    expect(await env.a.apiKeys.authenticate(deactivated.key)).toBeNull()
    await change({ active: true })
    expect(await env.a.apiKeys.authenticate(deactivated.key)).toBeNull()
    const signedOut = await mint('signed out')
    await change({ signOut: true })
    expect(await env.a.apiKeys.authenticate(signedOut.key)).toBeNull()
    const deleted = await mint('deleted')
    await env.b.users.remove(admin.id, { versions: null }, SYSTEM)
    expect(await env.a.apiKeys.authenticate(deleted.key)).toBeNull()
    expect((await env.a.apiKeys.list({ limit: 10, offset: 0 })).total).toBe(0)
  })

  test('a revocation judged by its caller sees the key’s scopes, user and ancestors, and a refusal revokes nothing', async () => {
    await using env = await twoInstances()
    const root = await env.a.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const child = await env.a.apiKeys.create(
      { name: 'child', scopes: ['keys:write', 'users:read'], parentId: root.id },
      SYSTEM,
    )
    const grandchild = await env.a.apiKeys.create(
      { name: 'grandchild', scopes: ['users:read'], parentId: child.id },
      SYSTEM,
    )
    const seen: unknown[] = []
    const refused = env.b.apiKeys.revoke(grandchild.id, SYSTEM, (key) => {
      seen.push(key)
      return new Error('not yours')
    })
    await expect(refused).rejects.toThrow('not yours')
    expect(seen).toEqual([
      {
        id: grandchild.id,
        scopes: ['users:read'],
        createdByUser: null,
        ancestors: expect.arrayContaining([root.id, child.id]),
      },
    ])
    expect(await env.a.apiKeys.authenticate(grandchild.key)).not.toBeNull()
    expect(await env.b.apiKeys.revoke(grandchild.id, SYSTEM, () => undefined)).toBe(true)
    expect(await env.a.apiKeys.authenticate(grandchild.key)).toBeNull()
    expect(await env.b.apiKeys.revoke(grandchild.id, SYSTEM, () => new Error('x'))).toBe(false)
  })
})
