import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { codeOf, twoInstances } from '../helpers/stores'

// The group store's contract, on SQLite (npm test) and on PostgreSQL with two instances
// (npm run test:postgres). See test/helpers/stores.ts.

const user = (env: Awaited<ReturnType<typeof twoInstances>>, name: string) =>
  env.a.users.create({ name, email: `${name}@example.com`, passwordHash: null }, SYSTEM)

describe('group store contract (two instances where the backend is shared)', () => {
  test('create, read, page and its total; names unique without regard to case', async () => {
    await using env = await twoInstances()
    const made = await env.a.groups.create({ name: ' Engineering ', description: 'builds' }, SYSTEM)
    expect(made).toMatchObject({
      name: 'Engineering',
      description: 'builds',
      members: [],
      version: 1,
    })
    await env.b.groups.create({ name: 'Sales', description: null }, SYSTEM)
    const taken = await Promise.allSettled([
      env.b.groups.create({ name: 'ENGINEERING', description: null }, SYSTEM),
    ])
    expect(taken.map(codeOf)).toEqual(['CONFLICT'])
    expect(await env.b.groups.get(made.id)).toEqual(made)
    const page = await env.b.groups.list({ limit: 1, offset: 1 })
    expect({ total: page.total, names: page.data.map((group) => group.name) }).toEqual({
      total: 2,
      names: ['Sales'],
    })
    const newest = await env.b.groups.list({ limit: 10, offset: 0, first: 'newest' })
    expect(newest.data.map((group) => group.name)).toEqual(['Sales', 'Engineering'])
    expect(await env.b.groups.get(999)).toBeNull()
  })

  test('one name created on both instances at once: one group, one CONFLICT', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 5; round++) {
      const outcomes = await Promise.allSettled([
        env.a.groups.create({ name: `Team ${round}`, description: null }, SYSTEM),
        env.b.groups.create({ name: `team ${round}`, description: null }, SYSTEM),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['CONFLICT', 'ok'])
    }
    expect((await env.a.groups.list({ limit: 100, offset: 0 })).total).toBe(5)
  })

  test('membership: added once, listed both ways, and both records move their versions', async () => {
    await using env = await twoInstances()
    const group = await env.a.groups.create({ name: 'Ops', description: null }, SYSTEM)
    const [ann, bob] = [await user(env, 'ann'), await user(env, 'bob')]
    expect(await env.a.groups.addMember(group.id, bob.id, SYSTEM)).toBe(true)
    expect(await env.b.groups.addMember(group.id, ann.id, SYSTEM)).toBe(true)
    expect(await env.b.groups.addMember(group.id, ann.id, SYSTEM)).toBe(false)
    const read = await env.b.groups.get(group.id)
    expect({ members: read?.members, version: read?.version }).toEqual({
      members: [ann.id, bob.id],
      version: 3,
    })
    const annNow = await env.a.users.get(ann.id)
    expect({ groups: annNow?.groups, version: annNow?.version }).toEqual({
      groups: [group.id],
      version: 2,
    })
    expect((await env.a.users.list({ limit: 10, offset: 0 })).data.map((u) => u.groups)).toEqual([
      [group.id],
      [group.id],
    ])
    expect(await env.a.groups.removeMember(group.id, ann.id, SYSTEM)).toBe(true)
    expect(await env.a.groups.removeMember(group.id, ann.id, SYSTEM)).toBe(false)
    expect((await env.b.users.get(ann.id))?.groups).toEqual([])
    const missing = await Promise.allSettled([
      env.a.groups.addMember(999, ann.id, SYSTEM),
      env.a.groups.addMember(group.id, 999, SYSTEM),
      env.a.groups.removeMember(999, ann.id, SYSTEM),
    ])
    expect(missing.map(codeOf)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND'])
  })

  test('deleting a group keeps its users; deleting a user keeps its groups and moves their versions, and only theirs', async () => {
    await using env = await twoInstances()
    const [one, two] = [
      await env.a.groups.create({ name: 'One', description: null }, SYSTEM),
      await env.a.groups.create({ name: 'Two', description: null }, SYSTEM),
    ]
    const cy = await user(env, 'cy')
    await env.a.groups.addMember(one.id, cy.id, SYSTEM)
    await env.a.groups.addMember(two.id, cy.id, SYSTEM)
    await env.b.groups.remove(one.id, { versions: null }, SYSTEM)
    expect((await env.a.users.get(cy.id))?.groups).toEqual([two.id])
    const other = await env.a.groups.create({ name: 'Three', description: null }, SYSTEM)
    const before = (await env.a.groups.get(two.id))?.version as number
    await env.b.users.remove(cy.id, { versions: null }, SYSTEM)
    const after = await env.a.groups.get(two.id)
    expect({ members: after?.members, moved: (after?.version as number) > before }).toEqual({
      members: [],
      moved: true,
    })
    // A group it was not in does not move.
    expect((await env.a.groups.get(other.id))?.version).toBe(other.version)
  })

  test('If-Match, echo and missing rows; a rename and a description cleared', async () => {
    await using env = await twoInstances()
    const group = await env.a.groups.create({ name: 'Old', description: 'text' }, SYSTEM)
    const stale = await Promise.allSettled([
      env.b.groups.update(group.id, { name: 'New' }, { versions: [7] }, SYSTEM),
      env.b.groups.update(group.id, { name: 'New' }, { versions: [1], echo: { id: 2 } }, SYSTEM),
      env.b.groups.update(999, { name: 'New' }, { versions: null }, SYSTEM),
      env.b.groups.remove(group.id, { versions: [9] }, SYSTEM),
    ])
    expect(stale.map(codeOf)).toEqual([
      'PRECONDITION_FAILED',
      'VALIDATION_ERROR',
      'NOT_FOUND',
      'PRECONDITION_FAILED',
    ])
    const renamed = await env.b.groups.update(
      group.id,
      { name: 'New', description: null },
      { versions: [1] },
      SYSTEM,
    )
    expect(renamed).toMatchObject({ name: 'New', description: null, version: 2 })
    const kept = await env.a.groups.update(group.id, { name: 'Newer' }, { versions: null }, SYSTEM)
    expect(kept.description).toBeNull()
    // Two writers with the same If-Match: one wins, the other is told it changed.
    const raced = await Promise.allSettled([
      env.a.groups.update(group.id, { name: 'A' }, { versions: [3] }, SYSTEM),
      env.b.groups.update(group.id, { name: 'B' }, { versions: [3] }, SYSTEM),
    ])
    expect(raced.map(codeOf).sort()).toEqual(['PRECONDITION_FAILED', 'ok'])
  })
})
