import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { sqliteFilePath } from '../../src/backends/sqlite/connection'
import { makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { searchKeyOf } from '../../src/users/search-key'
import { testData } from '../helpers/app'

// SQLite's search index (backends/sqlite/search-index.ts): built off the write path, in step with
// the users whatever the order of inserts, renames and deletions. The answers of `q` in every
// state are the users store contract's (test/stores/users.test.ts).

/** A server's dependencies (the indexer runs when writes pause) or a CLI's (it does not). */
async function fixture(serving: boolean) {
  const data = await testData({ databaseUrl: null, storage: null })
  const deps = await makeDeps(data.config, memoryLogger(), undefined, { serving })
  const file = () => new Database(sqliteFilePath(data.dataDir), { readonly: true })
  return {
    deps,
    dataDir: data.dataDir,
    /** Users the index covers, users above its mark, and stale entries. */
    state() {
      const db = file()
      try {
        return db
          .query<{ indexed: number; above: number; stale: number; counted: number }, []>(
            `SELECT
              (SELECT count(*) FROM users WHERE id <= s.through) AS indexed,
              (SELECT count(*) FROM users WHERE id > s.through) AS above,
              (SELECT count(*) FROM users_search_stale) AS stale,
              s.users AS counted
            FROM users_indexed s`,
          )
          .get()
      } finally {
        db.close()
      }
    },
    /** FTS5's own check that the index holds exactly the users' keys. */
    integrity() {
      const db = new Database(sqliteFilePath(data.dataDir))
      try {
        db.run("INSERT INTO users_search (users_search, rank) VALUES ('integrity-check', 1)")
      } finally {
        db.close()
      }
    },
    async [Symbol.asyncDispose]() {
      await deps.close()
      await data[Symbol.asyncDispose]()
    },
  }
}

async function addUsers(deps: Awaited<ReturnType<typeof makeDeps>>, from: number, to: number) {
  const rows = []
  for (let i = from; i <= to; i++) {
    rows.push({ name: `Person ${i}`, email: `p${i}@example.com`, passwordHash: null })
  }
  await deps.users.insertMany(rows, { allOrNothing: true })
}

describe('the SQLite search index', () => {
  test('a CLI leaves new users to the server; catching up indexes them, a batch at a time', async () => {
    await using f = await fixture(false)
    await addUsers(f.deps, 1, 1200)
    await Bun.sleep(600)
    expect(f.state()).toEqual({ indexed: 0, above: 1200, stale: 0, counted: 0 })
    await f.deps.catchUp()
    expect(f.state()).toEqual({ indexed: 1200, above: 0, stale: 0, counted: 1200 })
    f.integrity()
  })

  test('renames, new addresses and deletions of indexed users leave stale entries until the next batch', async () => {
    await using f = await fixture(false)
    await addUsers(f.deps, 1, 50)
    await f.deps.catchUp()
    const anyVersion = { versions: null }
    for (let id = 1; id <= 10; id++) {
      await f.deps.users.update(id, { name: `Renamed ${id}` }, anyVersion, SYSTEM)
      // A second change before the indexer runs: the index still holds the first key.
      await f.deps.users.update(id, { email: `renamed${id}@example.com` }, anyVersion, SYSTEM)
    }
    for (let id = 11; id <= 15; id++) await f.deps.users.remove(id, anyVersion, SYSTEM)
    await addUsers(f.deps, 51, 60)
    // A user added after the mark and changed before indexing needs no stale entry.
    await f.deps.users.update(55, { name: 'Late rename' }, anyVersion, SYSTEM)
    expect(f.state()).toEqual({ indexed: 45, above: 10, stale: 15, counted: 45 })
    // The total: the users kept below the mark and those above it.
    expect(await f.deps.users.count()).toBe(55)
    await f.deps.catchUp()
    expect(f.state()).toEqual({ indexed: 55, above: 0, stale: 0, counted: 55 })
    expect(await f.deps.users.count()).toBe(55)
    f.integrity()
    const found = await f.deps.users.search({
      sort: 'id',
      limit: 100,
      offset: 0,
      filters: { q: 'renamed' },
      counted: true,
    })
    expect(found.data.map((user) => user.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(found.total).toBe(10)
    await f.deps.users.remove(60, anyVersion, SYSTEM)
    expect(await f.deps.users.count()).toBe(54)
  })

  test('sort=name reads one order whatever the index has reached: none, all, stale or above the mark', async () => {
    await using f = await fixture(false)
    const names = [
      'Mia',
      'zoë',
      'Ávila',
      'bo',
      'Kai',
      'alma',
      'Émile',
      'Lu',
      'Yan',
      'dee',
      'Ove',
      'cy',
    ]
    const rows = names.map((name, i) => ({ name, email: `u${i}@example.com`, passwordHash: null }))
    await f.deps.users.insertMany(rows, { allOrNothing: true })
    const codePoints = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
    /** The order the contract gives: the folded name and email by code point, then the id. */
    async function expected() {
      const all = (
        await f.deps.users.search({
          sort: 'id',
          limit: 100,
          offset: 0,
          filters: {},
          counted: false,
        })
      ).data
      return all
        .map((user) => ({ id: user.id, key: searchKeyOf(user.name, user.email) }))
        .sort((a, b) => codePoints(a.key, b.key) || a.id - b.id)
        .map((user) => user.id)
    }
    /** Every page of 3, by cursor forward, by cursor back, and by offset, in both directions. */
    async function readsAgree() {
      const order = await expected()
      for (const sort of ['name', '-name'] as const) {
        const want = sort === 'name' ? order : order.toReversed()
        const forward: number[] = []
        let page = await f.deps.users.search({
          sort,
          limit: 3,
          offset: 0,
          filters: {},
          counted: false,
        })
        forward.push(...page.data.map((user) => user.id))
        while (page.next !== null) {
          page = await f.deps.users.search({
            sort,
            limit: 3,
            offset: 0,
            cursor: page.next,
            filters: {},
            counted: false,
          })
          forward.push(...page.data.map((user) => user.id))
        }
        expect(forward).toEqual(want)
        const back = page.data.map((user) => user.id)
        while (page.prev !== null && 'direction' in page.prev) {
          page = await f.deps.users.search({
            sort,
            limit: 3,
            offset: 0,
            cursor: page.prev,
            filters: {},
            counted: false,
          })
          back.unshift(...page.data.map((user) => user.id))
        }
        expect(back).toEqual(want)
        for (let offset = 0; offset < want.length; offset += 5) {
          const byOffset = await f.deps.users.search({
            sort,
            limit: 5,
            offset,
            filters: {},
            counted: false,
          })
          expect(byOffset.data.map((user) => user.id)).toEqual(want.slice(offset, offset + 5))
        }
      }
    }
    await readsAgree()
    await f.deps.catchUp()
    expect(f.state()).toMatchObject({ above: 0, stale: 0 })
    await readsAgree()
    const anyVersion = { versions: null }
    await f.deps.users.update(1, { name: 'Aaron' }, anyVersion, SYSTEM)
    await f.deps.users.update(2, { name: 'Zed' }, anyVersion, SYSTEM)
    await f.deps.users.update(2, { email: 'a@example.com' }, anyVersion, SYSTEM)
    await f.deps.users.remove(3, anyVersion, SYSTEM)
    await f.deps.users.insertMany([{ name: 'Nia', email: 'nia@example.com', passwordHash: null }], {
      allOrNothing: true,
    })
    expect(f.state()).toMatchObject({ above: 1, stale: 3 })
    await readsAgree()
    await f.deps.catchUp()
    await readsAgree()
    // The kept order holds exactly the users' keys once the indexer has caught up.
    const db = new Database(sqliteFilePath(f.dataDir), { readonly: true })
    try {
      const kept = db
        .query('SELECT user_id AS id, name_key AS key FROM users_name_order ORDER BY user_id')
        .all()
      const keys = db.query('SELECT id, search_key AS key FROM users ORDER BY id').all()
      expect(kept).toEqual(keys)
    } finally {
      db.close()
    }
  })

  test('a server indexes by itself once writes pause', async () => {
    await using f = await fixture(true)
    await addUsers(f.deps, 1, 700)
    const deadline = Date.now() + 10_000
    while (f.state()?.above !== 0 && Date.now() < deadline) await Bun.sleep(50)
    expect(f.state()).toEqual({ indexed: 700, above: 0, stale: 0, counted: 700 })
    f.integrity()
  })
})
