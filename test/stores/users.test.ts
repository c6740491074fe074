import { describe, expect, test } from 'bun:test'
import { newAccountToken } from '../../src/accounts/tokens'
import { SYSTEM } from '../../src/audit/events'
import type { User, UserRecord } from '../../src/users/records'
import type { Cursor, SearchRequest, UserSort } from '../../src/users/search'
import type { UserStore } from '../../src/users/store'
import { dbQuery } from '../helpers/app'
import { codeOf, twoInstances } from '../helpers/stores'

/** A counted search in id order from the first row, with what a case changes. */
const searchById = (users: UserStore, request: Partial<SearchRequest> = {}) =>
  users.search({ sort: 'id', limit: 100, offset: 0, filters: {}, counted: true, ...request })

/** The names of the users `q` finds. */
const find = async (users: UserStore, q: string) =>
  (await searchById(users, { filters: { q } })).data.map((user) => user.name)

const ANY_VERSION = { versions: null }

// The users store's contract: the same cases on SQLite (npm test) and on PostgreSQL with two
// instances (npm run test:postgres). See test/helpers/stores.ts.

describe('users store contract (two instances where the backend is shared)', () => {
  test('two PUTs with the same If-Match, one on each instance: exactly one wins, the other is 412', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 10; round++) {
      const user = await env.a.users.create(
        {
          name: 'Ada',
          email: `ada${round}@example.com`,
          passwordHash: null,
        },
        SYSTEM,
      )
      const outcomes = await Promise.allSettled([
        env.a.users.update(user.id, { name: 'From A' }, { versions: [user.version] }, SYSTEM),
        env.b.users.update(user.id, { name: 'From B' }, { versions: [user.version] }, SYSTEM),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['PRECONDITION_FAILED', 'ok'])
      const stored = await env.b.users.get(user.id)
      expect(stored?.version).toBe(user.version + 1)
    }
  })

  test('the same email in another case, created on both at once: one user, one CONFLICT', async () => {
    await using env = await twoInstances()
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.allSettled([
        env.a.users.create(
          { name: 'A', email: `Grace${round}@Example.com`, passwordHash: null },
          SYSTEM,
        ),
        env.b.users.create(
          { name: 'B', email: `grace${round}@example.COM`, passwordHash: null },
          SYSTEM,
        ),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['CONFLICT', 'ok'])
    }
    expect(await env.a.users.count()).toBe(10)
  })

  test('a DELETE racing a PUT with the same If-Match: one of them, never both', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Lin',
        email: 'lin@example.com',
        passwordHash: null,
      },
      SYSTEM,
    )
    const outcomes = await Promise.allSettled([
      env.a.users.remove(user.id, { versions: [user.version] }, SYSTEM),
      env.b.users.update(user.id, { name: 'Late' }, { versions: [user.version] }, SYSTEM),
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
      await env.a.users.create(
        {
          name: ` User ${i} `,
          email: `u${i}@Example.com`,
          passwordHash: i === 1 ? 'hash' : null,
        },
        SYSTEM,
      )
    }
    const page = await env.b.users.list({ limit: 2, offset: 2 })
    expect(page.total).toBe(5)
    expect(page.data.map((user) => user.name)).toEqual(['User 3', 'User 4'])
    expect(page.data.map((user) => user.active)).toEqual([true, true])
    expect(Object.keys(page.data[0] as object).sort()).toEqual([
      'active',
      'created_at',
      'email',
      'email_verified_at',
      'groups',
      'id',
      'name',
      'role',
      'updated_at',
      'username',
    ])
    expect(await env.b.users.list({ limit: 2, offset: 10 })).toEqual({ data: [], total: 5 })
    expect(await env.b.users.byEmail('U1@EXAMPLE.COM')).toEqual({
      id: 1,
      email: 'u1@Example.com',
      passwordHash: 'hash',
      role: 'member',
      verified: false,
      active: true,
      secondFactor: false,
    })
    expect((await env.b.users.withPasswordHash(1))?.passwordHash).toBe('hash')
    expect(await env.b.users.get(99)).toBeNull()
    expect(await env.b.users.idByEmail('u2@example.com')).toBe(2)
    expect(await env.b.users.emailsTaken(['U3@example.com', 'nobody@example.com'])).toEqual(
      new Set(['u3@example.com']),
    )
  })

  test('a username signs in like the email; a username that is the email follows a new address', async () => {
    await using env = await twoInstances()
    const ada = await env.a.users.create(
      { name: 'Ada', email: 'ada@example.com', passwordHash: 'hash' },
      SYSTEM,
    )
    const bob = await env.a.users.create(
      { name: 'Bob', email: 'bob@example.com', username: 'Bobby', passwordHash: null },
      SYSTEM,
    )
    expect(ada.username).toBe('ada@example.com')
    expect(bob.username).toBe('Bobby')
    expect((await env.b.users.bySignInName('BOBBY'))?.id).toBe(bob.id)
    expect((await env.b.users.bySignInName('bob@example.com'))?.id).toBe(bob.id)
    expect(await env.b.users.bySignInName('nobody')).toBeNull()

    const moved = await env.b.users.update(
      ada.id,
      { email: 'ada@new.example' },
      { versions: null },
      SYSTEM,
    )
    expect(moved.username).toBe('ada@new.example')
    const renamed = await env.b.users.update(
      bob.id,
      { email: 'robert@example.com' },
      { versions: null },
      SYSTEM,
    )
    expect(renamed.username).toBe('Bobby')
    // The old address is free for anyone, as an email and as a username.
    const next = await env.a.users.create(
      { name: 'Next', email: 'ADA@example.com', passwordHash: null },
      SYSTEM,
    )
    expect(next.username).toBe('ADA@example.com')
  })

  test('a username taken in another case is CONFLICT on username; an email that is one, on email', async () => {
    await using env = await twoInstances()
    await env.a.users.create(
      { name: 'Bob', email: 'bob@example.com', username: 'bobby', passwordHash: null },
      SYSTEM,
    )
    const taken = await env.b.users
      .create(
        { name: 'B2', email: 'b2@example.com', username: 'BOBBY', passwordHash: null },
        SYSTEM,
      )
      .catch((error: unknown) => error)
    expect(taken).toMatchObject({ errorCode: 'CONFLICT', details: [{ field: 'username' }] })
    // An email whose default username another user holds.
    await env.a.users.create(
      { name: 'C', email: 'c@example.com', username: 'dee@example.com', passwordHash: null },
      SYSTEM,
    )
    const clash = await env.b.users
      .create({ name: 'Dee', email: 'dee@example.com', passwordHash: null }, SYSTEM)
      .catch((error: unknown) => error)
    expect(clash).toMatchObject({ errorCode: 'CONFLICT', details: [{ field: 'email' }] })
    expect(await env.b.users.count()).toBe(2)
  })

  test('deactivating ends the user’s sessions and tokens; sign-in lookups say so; reactivating keeps them ended', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      { name: 'Sam', email: 'sam@example.com', passwordHash: 'hash' },
      SYSTEM,
    )
    const issued = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    const off = await env.b.users.update(user.id, { active: false }, { versions: null }, SYSTEM)
    expect(off.active).toBe(false)
    expect(await env.a.credentials.useSession(issued.sessionToken)).toBeNull()
    expect(await env.a.credentials.useAccessToken(issued.accessToken)).toBeNull()
    expect((await env.a.users.bySignInName('sam@example.com'))?.active).toBe(false)
    expect((await env.a.users.withPasswordHash(user.id))?.user.active).toBe(false)
    const on = await env.b.users.update(user.id, { active: true }, { versions: null }, SYSTEM)
    expect(on.active).toBe(true)
    expect(on.version).toBe(off.version + 1)
    expect((await env.a.users.bySignInName('sam@example.com'))?.active).toBe(true)
  })

  test('a new password ends the user’s sessions and tokens in the same transaction', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Sam',
        email: 'sam@example.com',
        passwordHash: 'old',
      },
      SYSTEM,
    )
    const issued = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    await env.b.users.update(user.id, { passwordHash: 'new' }, { versions: null }, SYSTEM)
    expect(await env.a.credentials.useSession(issued.sessionToken)).toBeNull()
    expect(await env.a.credentials.useAccessToken(issued.accessToken)).toBeNull()
  })

  test('a role change ends the user’s sessions and tokens; the same role again does not', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Ro',
        email: 'ro@example.com',
        passwordHash: 'h',
      },
      SYSTEM,
    )
    const first = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    await env.b.users.update(user.id, { role: 'member' }, { versions: null }, SYSTEM)
    expect(await env.a.credentials.useSession(first.sessionToken)).not.toBeNull()
    const promoted = await env.b.users.update(
      user.id,
      { role: 'admin' },
      { versions: null },
      SYSTEM,
    )
    expect(promoted.role).toBe('admin')
    expect(await env.a.credentials.useSession(first.sessionToken)).toBeNull()
    expect(await env.a.credentials.useAccessToken(first.accessToken)).toBeNull()
    const second = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    expect((await env.a.credentials.useSession(second.sessionToken))?.user.role).toBe('admin')
  })

  test('the last admin is neither demoted nor deleted; a guard may refuse any role change', async () => {
    await using env = await twoInstances()
    const admin = await env.a.users.create(
      {
        name: 'Ad',
        email: 'ad@example.com',
        passwordHash: null,
        role: 'admin',
      },
      SYSTEM,
    )
    const outcomes = await Promise.allSettled([
      env.a.users.update(admin.id, { role: 'member' }, { versions: null }, SYSTEM),
      env.b.users.remove(admin.id, { versions: null }, SYSTEM),
    ])
    expect(outcomes.map(codeOf)).toEqual(['CONFLICT', 'CONFLICT'])
    const refusal = new Error('no authority')
    await expect(
      env.b.users.update(
        admin.id,
        { role: 'member' },
        { versions: null, refuseRoleChange: refusal },
        SYSTEM,
      ),
    ).rejects.toBe(refusal)
    expect((await env.b.users.get(admin.id))?.role).toBe('admin')
  })

  test('two admins demoting each other at once, on two instances, leave one admin', async () => {
    await using env = await twoInstances()
    const admin = (name: string) =>
      env.a.users.create(
        { name, email: `${name}@example.com`, passwordHash: null, role: 'admin' },
        SYSTEM,
      )
    let survivor = await admin('first')
    for (let round = 0; round < 10; round++) {
      const newcomer = await admin(`admin${round}`)
      const outcomes = await Promise.allSettled([
        env.a.users.update(survivor.id, { role: 'member' }, { versions: null }, SYSTEM),
        env.b.users.update(newcomer.id, { role: 'member' }, { versions: null }, SYSTEM),
      ])
      expect(outcomes.map(codeOf).sort()).toEqual(['CONFLICT', 'ok'])
      survivor = outcomes[0]?.status === 'rejected' ? survivor : newcomer
      expect((await env.b.users.get(survivor.id))?.role).toBe('admin')
    }
  })

  test('a name change leaves them; a deletion ends them, and its rows go with the user', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Al',
        email: 'al@example.com',
        passwordHash: 'h',
      },
      SYSTEM,
    )
    const issued = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    await env.b.users.update(user.id, { name: 'Albert' }, { versions: null }, SYSTEM)
    expect((await env.a.credentials.useSession(issued.sessionToken))?.user.name).toBe('Albert')
    await env.b.users.remove(user.id, { versions: null }, SYSTEM)
    expect(await env.a.credentials.useSession(issued.sessionToken)).toBeNull()
    expect(await env.a.credentials.useAccessToken(issued.accessToken)).toBeNull()
    // The database's cascade removes them, not a lookup that no longer finds their user.
    for (const table of ['sessions', 'access_tokens']) {
      const rows = await dbQuery(env.a, `SELECT id FROM ${table} WHERE user_id = ${user.id}`)
      expect(rows).toEqual([])
    }
  })

  test('inside a unit of work a password change revokes too, and a failing unit keeps both', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Bo',
        email: 'bo@example.com',
        passwordHash: 'h',
      },
      SYSTEM,
    )
    const issued = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    await expect(
      env.b.transaction(async (tx) => {
        await tx.users.update(user.id, { passwordHash: 'new' }, { versions: null }, SYSTEM)
        throw new Error('the unit fails after the write')
      }),
    ).rejects.toThrow('the unit fails')
    expect((await env.a.users.withPasswordHash(user.id))?.passwordHash).toBe('h')
    expect((await env.a.credentials.useSession(issued.sessionToken))?.user.id).toBe(user.id)
    await env.b.transaction((tx) =>
      tx.users.update(user.id, { passwordHash: 'new' }, { versions: null }, SYSTEM),
    )
    expect(await env.a.credentials.useSession(issued.sessionToken)).toBeNull()
  })

  test('a new password, an address or a sign-out ends the mailed links but not an undo link (an undo ends those itself), and a sign-out the sessions', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      { name: 'Bo', email: 'bo@example.com', passwordHash: 'h' },
      SYSTEM,
    )
    const issued = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    const at = env.a.clock()
    const link = (flow: 'password-reset' | 'email-change-undo') => {
      const { tokenHash } = newAccountToken()
      const token = { userId: user.id, flow, tokenHash, codeHash: null, email: 'bo@example.com' }
      return { tokenHash, row: { ...token, createdAt: at, expiresAt: at + 60_000 } }
    }
    const [reset, undo, later] = [
      link('password-reset'),
      link('email-change-undo'),
      link('email-change-undo'),
    ]
    await env.a.transaction(async (tx) => {
      for (const { row } of [reset, undo, later]) await tx.accountTokens.issue(row)
    })
    await env.b.users.update(
      user.id,
      { passwordHash: 'new', email: 'bo@new.example' },
      ANY_VERSION,
      SYSTEM,
    )
    const use = (hash: string, flow: 'password-reset' | 'email-change-undo') =>
      env.a.transaction((tx) => tx.accountTokens.use(flow, hash, env.a.clock()))
    expect(await use(reset.tokenHash, 'password-reset')).toBe('used')
    expect(await use(undo.tokenHash, 'email-change-undo')).toMatchObject({ userId: user.id })

    const fresh = await env.a.credentials.issue(user.id, SYSTEM, 'password')
    const back = await env.b.transaction(async (tx) => ({
      before: await tx.users.lockedAddress(user.id),
      after: await tx.users.update(
        user.id,
        { email: 'bo@example.com', signOut: true },
        ANY_VERSION,
        SYSTEM,
      ),
    }))
    expect({ before: back.before, after: back.after.email }).toEqual({
      before: 'bo@new.example',
      after: 'bo@example.com',
    })
    expect(await use(later.tokenHash, 'email-change-undo')).toMatchObject({ userId: user.id })
    expect(await env.a.credentials.useSession(fresh.sessionToken)).toBeNull()
    expect(await env.a.credentials.useAccessToken(issued.accessToken)).toBeNull()
    expect(await env.a.transaction((tx) => tx.users.lockedAddress(999_999))).toBeNull()
  })

  test('If-Match, echo and missing rows', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      {
        name: 'Eve',
        email: 'eve@example.com',
        passwordHash: null,
      },
      SYSTEM,
    )
    await expect(
      env.a.users.update(user.id, { name: 'x' }, { versions: [user.version + 5] }, SYSTEM),
    ).rejects.toMatchObject({ errorCode: 'PRECONDITION_FAILED' })
    await expect(
      env.a.users.update(
        user.id,
        { name: 'x' },
        { versions: null, echo: { id: user.id + 1 } },
        SYSTEM,
      ),
    ).rejects.toMatchObject({ errorCode: 'VALIDATION_ERROR' })
    await expect(env.a.users.remove(999, { versions: null }, SYSTEM)).rejects.toMatchObject({
      errorCode: 'NOT_FOUND',
    })
    const other = await env.a.users.create(
      {
        name: 'Mo',
        email: 'mo@example.com',
        passwordHash: null,
      },
      SYSTEM,
    )
    await expect(
      env.b.users.update(other.id, { email: 'EVE@example.com' }, { versions: null }, SYSTEM),
    ).rejects.toMatchObject({ errorCode: 'CONFLICT' })
    expect((await env.a.users.get(user.id))?.version).toBe(1)
  })

  test('export reads one snapshot in batches; import reports conflicts, all or nothing on request', async () => {
    await using env = await twoInstances()
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      name: `N${i}`,
      email: `n${i}@example.com`,
      passwordHash: null,
    }))
    expect(await env.a.users.insertMany(rows, { allOrNothing: false })).toEqual({
      inserted: 2500,
      conflicts: [],
    })
    const again = [
      { name: 'New', email: 'fresh@example.com', passwordHash: null },
      rows[0] as (typeof rows)[0],
    ]
    expect(await env.a.users.insertMany(again, { allOrNothing: true })).toEqual({
      inserted: 0,
      conflicts: [1],
    })
    expect(await env.a.users.idByEmail('fresh@example.com')).toBeNull()
    const batches: number[] = []
    let seen = 0
    for await (const batch of env.b.users.exportAll()) {
      if (batches.length === 0)
        await env.a.users.create(
          {
            name: 'During',
            email: 'during@example.com',
            passwordHash: null,
          },
          SYSTEM,
        )
      batches.push(batch.length)
      seen += batch.length
    }
    // In batches (each backend picks their size), and from one snapshot: the user created
    // while the export ran is not in it.
    expect(batches.length).toBeGreaterThan(1)
    expect(seen).toBe(2500)
  })
})

describe('users store contract: the v2 search', () => {
  test('filters, offsets and cursors both ways', async () => {
    await using env = await twoInstances()
    for (let i = 1; i <= 30; i++) {
      const name = i % 3 === 0 ? `Team_${i}` : `Solo ${i}`
      await env.a.users.create({ name, email: `p${i}@example.com`, passwordHash: null }, SYSTEM)
    }
    const first = await searchById(env.b.users, { limit: 4, filters: { q: 'team_' } })
    expect(first.total).toBe(10)
    expect(first.data.map((user) => user.id)).toEqual([3, 6, 9, 12])
    expect(first.next).toEqual({ direction: 'after', sort: 'id', id: 12 })
    expect(first.prev).toBeNull()
    // `_` is literal, not a wildcard: "Solo 1_" matches nothing.
    expect((await searchById(env.b.users, { limit: 4, filters: { q: 'o_1' } })).total).toBe(0)
    const second = await searchById(env.b.users, {
      limit: 4,
      cursor: { direction: 'after', sort: 'id', id: 12 },
      filters: { q: 'TEAM' },
    })
    expect(second.data.map((user) => user.id)).toEqual([15, 18, 21, 24])
    expect(second.prev).toEqual({ direction: 'before', sort: 'id', id: 15 })
    expect(second.offset).toBeNull()
    const back = await searchById(env.b.users, {
      limit: 4,
      cursor: { direction: 'before', sort: 'id', id: 15 },
      filters: { q: 'team' },
    })
    expect(back.data.map((user) => user.id)).toEqual([3, 6, 9, 12])
    expect(back.prev).toBeNull()
    const last = await searchById(env.b.users, { limit: 4, offset: 8, filters: { q: 'team' } })
    expect(last.data.map((user) => user.id)).toEqual([27, 30])
    expect(last.next).toBeNull()
    expect(last.prev).toEqual({ offset: 4 })
    const byEmail = await searchById(env.b.users, {
      limit: 5,
      filters: { email: 'P7@EXAMPLE.com' },
    })
    expect(byEmail.data.map((user) => user.id)).toEqual([7])
  })
})

describe('users store contract: sorted by name, email or id, both ways', () => {
  // Case, accents, a shared name, a prefix of another name and a non-Latin script: the order
  // is the folded name (then the email) by code point, the same on every database.
  const people: [string, string][] = [
    ['bob', 'bob@example.com'],
    ['Ada', 'z-ada@example.com'],
    ['Émile', 'emile@example.com'],
    ['ada', 'a-ada@example.com'],
    ['Zoë', 'ZOE@example.com'],
    ['Anna', 'anna@example.com'],
    ['Ann', 'Ann@Example.com'],
    ['Ärger', 'arger@example.com'],
    ['Ωmega', 'omega@example.com'],
    ['zed', 'Zed@example.com'],
    ['Ada', 'm-ada@example.com'],
  ]
  const byName = [
    'ada',
    'Ada',
    'Ada',
    'Ann',
    'Anna',
    'Ärger',
    'bob',
    'Émile',
    'zed',
    'Zoë',
    'Ωmega',
  ]
  const byEmail = [
    'a-ada@example.com',
    'Ann@Example.com',
    'anna@example.com',
    'arger@example.com',
    'bob@example.com',
    'emile@example.com',
    'm-ada@example.com',
    'omega@example.com',
    'z-ada@example.com',
    'Zed@example.com',
    'ZOE@example.com',
  ]

  async function sortedRoster() {
    const env = await twoInstances()
    for (const [name, email] of people)
      await env.a.users.create({ name, email, passwordHash: null }, SYSTEM)
    return env
  }

  /** Every user in the sort, read a page of `limit` at a time by cursor, forward then back. */
  async function walk(users: UserStore, sort: UserSort, limit: number, filters = {}) {
    const pages: User[][] = []
    let page = await users.search({ sort, limit, offset: 0, filters, counted: false })
    pages.push(page.data)
    while (page.next !== null) {
      page = await users.search({
        sort,
        limit,
        offset: 0,
        cursor: page.next,
        filters,
        counted: false,
      })
      pages.push(page.data)
    }
    const back: User[][] = [page.data]
    while (page.prev !== null) {
      expect(page.prev).not.toHaveProperty('offset')
      page = await users.search({
        sort,
        limit,
        offset: 0,
        cursor: page.prev as Cursor,
        filters,
        counted: false,
      })
      back.unshift(page.data)
    }
    expect(back).toEqual(pages)
    return pages.flat()
  }

  test('name and email order by their folded text, a name then by email; a leading - reverses it', async () => {
    await using env = await sortedRoster()
    const names = (users: User[]) => users.map((user) => user.name)
    const emails = (users: User[]) => users.map((user) => user.email)
    for (const limit of [1, 2, 3, 100]) {
      expect(names(await walk(env.b.users, 'name', limit))).toEqual(byName)
      expect(names(await walk(env.b.users, '-name', limit))).toEqual(byName.toReversed())
      expect(emails(await walk(env.b.users, 'email', limit))).toEqual(byEmail)
      expect(emails(await walk(env.b.users, '-email', limit))).toEqual(byEmail.toReversed())
      const ids = (await walk(env.b.users, '-id', limit)).map((user) => user.id)
      expect(ids).toEqual(people.map((_, index) => people.length - index))
    }
    // Users of one name go by email: the Adas are a-ada, m-ada, z-ada, whatever their ids.
    const adas = (users: User[]) =>
      users.filter((user) => user.name.toLowerCase() === 'ada').map((u) => u.id)
    expect(adas(await walk(env.b.users, 'name', 2))).toEqual([4, 11, 2])
    expect(adas(await walk(env.b.users, '-name', 2))).toEqual([2, 11, 4])
  })

  test('offsets, filters and the total follow the sort', async () => {
    await using env = await sortedRoster()
    const page = await env.b.users.search({
      sort: '-name',
      limit: 3,
      offset: 2,
      filters: {},
      counted: true,
    })
    expect(page.data.map((user) => user.name)).toEqual(byName.toReversed().slice(2, 5))
    expect(page.total).toBe(people.length)
    expect(page.next).toMatchObject({ direction: 'after', sort: '-name', id: 1 })
    const ann = await walk(env.b.users, 'email', 1, { q: 'ann' })
    expect(ann.map((user) => user.email)).toEqual(['Ann@Example.com', 'anna@example.com'])
  })

  test('a cursor whose user is gone still marks its place; past the end, a page links back', async () => {
    await using env = await sortedRoster()
    /** Four users by name: the first four, or those after (or before) a cursor. */
    const byNameFrom = (cursor?: Cursor | null) =>
      env.b.users.search({
        sort: 'name',
        limit: 4,
        offset: 0,
        ...(cursor ? { cursor } : {}),
        filters: {},
        counted: false,
      })
    const names = (page: { data: User[] }) => page.data.map((user) => user.name)
    const first = await byNameFrom()
    expect(names(first)).toEqual(byName.slice(0, 4))
    const ann = first.data[3] as User
    await env.a.users.remove(ann.id, ANY_VERSION, SYSTEM)
    const second = await byNameFrom(first.next)
    expect(names(second)).toEqual(byName.slice(4, 8))
    // Back from the second page: the three users before Anna, Ann gone.
    const back = await byNameFrom(second.prev as Cursor)
    expect(names(back)).toEqual(byName.slice(0, 3))
    expect(back.prev).toBeNull()
    // Past the end: an empty page that links back to the last user, included.
    const end = await byNameFrom({ direction: 'after', sort: 'name', id: 11, key: '\uffff' })
    expect(end.data).toEqual([])
    expect(end.next).toBeNull()
    expect(names(await byNameFrom(end.prev as Cursor))).toEqual(byName.slice(-4))
  })
})

describe('users store contract: q without regard to case or accents, through the index', () => {
  test('finds a name or an email by any piece of it, folded the same way on every database', async () => {
    await using env = await twoInstances()
    const people = [
      ['José Ñúñez', 'jose@example.com'],
      ['ÉMILE Zola', 'emile@example.org'],
      ['FIona Grün', 'fiona@example.net'],
      ['Plain "Quoted" 100%', 'plain@example.com'],
    ] as const
    for (const [name, email] of people) {
      await env.a.users.create({ name, email, passwordHash: null }, SYSTEM)
    }
    const expectations = async () => {
      expect(await find(env.b.users, 'jose')).toEqual(['José Ñúñez'])
      expect(await find(env.b.users, 'NUÑEZ')).toEqual(['José Ñúñez'])
      expect(await find(env.b.users, 'émile zo')).toEqual(['ÉMILE Zola'])
      expect(await find(env.b.users, 'fiona gru')).toEqual(['FIona Grün'])
      // Two characters and one: no trigram to look up, the same answer by reading every key.
      expect(await find(env.b.users, 'Ñu')).toEqual(['José Ñúñez'])
      expect(await find(env.b.users, 'Ü')).toEqual([
        'José Ñúñez',
        'FIona Grün',
        'Plain "Quoted" 100%',
      ])
      // Quotes, % and _ are text, not syntax.
      expect(await find(env.b.users, '"quoted"')).toEqual(['Plain "Quoted" 100%'])
      expect(await find(env.b.users, '0%')).toEqual(['Plain "Quoted" 100%'])
      expect(await find(env.b.users, 'e_c')).toEqual([])
      // The email is searched too, and no match spans the name and the email.
      expect(await find(env.b.users, 'EXAMPLE.ORG')).toEqual(['ÉMILE Zola'])
      expect(await find(env.b.users, 'zolaemile')).toEqual([])
      expect(await find(env.b.users, 'zola emile')).toEqual([])
    }
    // Before SQLite's indexer has run (every user read directly) and after (through the index).
    await expectations()
    await env.a.catchUp()
    await expectations()
  })

  test('follows renames, address changes and deletions at once', async () => {
    await using env = await twoInstances()
    const user = await env.a.users.create(
      { name: 'Ada Lovelace', email: 'ada@example.com', passwordHash: null },
      SYSTEM,
    )
    // Indexed first, so each change leaves a stale index entry behind it.
    await env.a.catchUp()
    await env.a.users.update(user.id, { name: 'Augusta King' }, ANY_VERSION, SYSTEM)
    expect(await find(env.b.users, 'lovelace')).toEqual([])
    expect(await find(env.b.users, 'augusta')).toEqual(['Augusta King'])
    await env.a.users.update(user.id, { email: 'countess@example.com' }, ANY_VERSION, SYSTEM)
    expect(await find(env.b.users, 'countess')).toEqual(['Augusta King'])
    expect(await find(env.b.users, 'ada@')).toEqual([])
    expect(await find(env.b.users, 'augusta')).toEqual(['Augusta King'])
    await env.a.catchUp()
    expect(await find(env.b.users, 'augusta')).toEqual(['Augusta King'])
    expect(await find(env.b.users, 'lovelace')).toEqual([])
    await env.a.users.remove(user.id, ANY_VERSION, SYSTEM)
    expect(await find(env.b.users, 'augusta')).toEqual([])
    await env.a.catchUp()
    expect(await find(env.b.users, 'augusta')).toEqual([])
    expect((await searchById(env.b.users, { limit: 5, filters: { q: 'king' } })).total).toBe(0)
  })
})

describe('users store contract: the total is kept, not counted', () => {
  const total = async (users: UserStore) => ({
    count: await users.count(),
    page: (await users.list({ limit: 1, offset: 0 })).total,
    search: (await searchById(users, { limit: 1 })).total,
  })

  test('follows creates, deletes and imports (a rolled-back import counts nothing)', async () => {
    await using env = await twoInstances()
    const created = []
    for (let i = 1; i <= 5; i++) {
      created.push(
        await env.a.users.create(
          { name: `U${i}`, email: `u${i}@example.com`, passwordHash: null },
          SYSTEM,
        ),
      )
    }
    expect(await total(env.b.users)).toEqual({ count: 5, page: 5, search: 5 })
    await env.b.users.remove((created[0] as UserRecord).id, ANY_VERSION, SYSTEM)
    expect(await total(env.a.users)).toEqual({ count: 4, page: 4, search: 4 })
    const rows = Array.from({ length: 30 }, (_, i) => ({
      name: `Imported ${i}`,
      email: `imported${i}@example.com`,
      passwordHash: null,
    }))
    const taken = [...rows, { name: 'Again', email: 'u2@example.com', passwordHash: null }]
    expect(await env.a.users.insertMany(taken, { allOrNothing: true })).toEqual({
      inserted: 0,
      conflicts: [30],
    })
    expect(await total(env.b.users)).toEqual({ count: 4, page: 4, search: 4 })
    expect(await env.a.users.insertMany(taken, { allOrNothing: false })).toEqual({
      inserted: 30,
      conflicts: [30],
    })
    expect(await total(env.b.users)).toEqual({ count: 34, page: 34, search: 34 })
    expect(await find(env.b.users, 'imported 29')).toEqual(['Imported 29'])
  })

  test('is left out when the search asks for no count', async () => {
    await using env = await twoInstances()
    await env.a.users.create(
      { name: 'Solo', email: 'solo@example.com', passwordHash: null },
      SYSTEM,
    )
    const page = await searchById(env.b.users, { limit: 1, counted: false })
    expect(page.total).toBeNull()
    expect(page.data.map((user) => user.name)).toEqual(['Solo'])
  })
})
