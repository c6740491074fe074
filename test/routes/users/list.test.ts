import { describe, expect, test } from 'bun:test'
import { searchKeyOf } from '../../../src/users/search-key'
import { dbQuery, expectEnvelope, makeTestApp, type Reply, type TestApp } from '../../helpers/app'
import { linkTargets } from '../../helpers/links'

/** Inserts n users directly (the list is what is under test, not create). */
async function seed(t: TestApp, n: number, name = (i: number) => `User ${i}`) {
  const at = '2026-01-01T00:00:00.000Z'
  for (let i = 1; i <= n; i++) {
    await dbQuery(
      t.deps,
      'INSERT INTO users (name, email, email_key, created_at, updated_at, search_key) VALUES (?, ?, ?, ?, ?, ?)',
      name(i),
      `user${i}@example.com`,
      `user${i}@example.com`,
      at,
      at,
      searchKeyOf(name(i), `user${i}@example.com`),
    )
  }
}

function ids(reply: Reply): number[] {
  return reply.body.data.map((user: { id: number }) => user.id)
}

function follow(t: TestApp, link: string | undefined) {
  if (link === undefined) throw new Error('no such link')
  return t.get(link.replace('http://localhost', ''))
}

describe('GET /users (v1)', () => {
  test('an empty list: envelope, X-Total-Count 0, first and last links only', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/users')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ data: [], pagination: { limit: 20, offset: 0, total: 0 } })
    expect(reply.headers.get('x-total-count')).toBe('0')
    expect(linkTargets(reply.headers.get('link'))).toEqual({
      first: 'http://localhost/users?limit=20&offset=0',
      last: 'http://localhost/users?limit=20&offset=0',
    })
  })

  test('pages by limit and offset, ordered by id, with every link', async () => {
    await using t = await makeTestApp()
    await seed(t, 45)
    const reply = await t.get('/users?limit=10&offset=20')
    expect(reply.body.data.map((u: { id: number }) => u.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => 21 + i),
    )
    expect(reply.body.pagination).toEqual({ limit: 10, offset: 20, total: 45 })
    expect(reply.headers.get('x-total-count')).toBe('45')
    expect(linkTargets(reply.headers.get('link'))).toEqual({
      first: 'http://localhost/users?limit=10&offset=0',
      prev: 'http://localhost/users?limit=10&offset=10',
      next: 'http://localhost/users?limit=10&offset=30',
      last: 'http://localhost/users?limit=10&offset=40',
    })
  })

  test('the last page has no next; the first has no prev', async () => {
    await using t = await makeTestApp()
    await seed(t, 40)
    expect(
      Object.keys(linkTargets((await t.get('/users?limit=20&offset=20')).headers.get('link'))),
    ).toEqual(['first', 'prev', 'last'])
    expect(Object.keys(linkTargets((await t.get('/users?limit=20')).headers.get('link')))).toEqual([
      'first',
      'next',
      'last',
    ])
    // last offset is floor((total-1)/limit)*limit: 40 users, limit 20 -> 20
    expect(linkTargets((await t.get('/users')).headers.get('link')).last).toEndWith('offset=20')
  })

  test('an offset past the end answers an empty page', async () => {
    await using t = await makeTestApp()
    await seed(t, 3)
    const reply = await t.get('/users?offset=100')
    expect(reply.body).toEqual({ data: [], pagination: { limit: 20, offset: 100, total: 3 } })
  })

  test('the Link base is --public-url when set, and the version prefix is kept', async () => {
    await using t = await makeTestApp({ publicUrl: 'https://api.example.com/roster' })
    await seed(t, 30)
    const reply = await t.get('/v1/users?limit=10')
    expect(linkTargets(reply.headers.get('link')).next).toBe(
      'https://api.example.com/roster/v1/users?limit=10&offset=10',
    )
  })

  test.each([
    ['limit=0', 'limit', '0'],
    ['limit=101', 'limit', '101'],
    ['limit=-1', 'limit', '-1'],
    ['limit=1e2', 'limit', '1e2'],
    ['limit=abc', 'limit', 'abc'],
    ['limit=', 'limit', ''],
    ['limit=%2010', 'limit', ' 10'],
    ['limit=5.0', 'limit', '5.0'],
    ['offset=-1', 'offset', '-1'],
    ['offset=0x10', 'offset', '0x10'],
    ['offset=1.5', 'offset', '1.5'],
    ['offset=99999999999999999999', 'offset', '99999999999999999999'],
    ['limit=5&limit=6', 'limit', '5,6'],
  ])(
    '?%s is a VALIDATION_ERROR naming %s with the received text',
    async (query, field, received) => {
      await using t = await makeTestApp()
      const error = expectEnvelope(await t.get(`/users?${query}`), 422, 'VALIDATION_ERROR')
      expect(error.details).toEqual([{ field, message: expect.any(String), received }])
    },
  )

  test('both bad parameters are reported together', async () => {
    await using t = await makeTestApp()
    const error = expectEnvelope(await t.get('/users?limit=0&offset=x'), 422, 'VALIDATION_ERROR')
    expect(error.details.map((d) => d.field)).toEqual(['limit', 'offset'])
  })

  test('v1 ignores v2 parameters', async () => {
    await using t = await makeTestApp()
    await seed(t, 5)
    const reply = await t.get('/users?email=user1@example.com&cursor=zzz')
    expect(reply.body.pagination).toEqual({ limit: 20, offset: 0, total: 5 })
    expect(reply.body.pagination.next_cursor).toBeUndefined()
  })

  test('HEAD gives the GET status and headers, no body', async () => {
    await using t = await makeTestApp()
    await seed(t, 25)
    const get = await t.get('/users')
    const head = await t.call('HEAD', '/users')
    expect(head.status).toBe(200)
    expect(head.text).toBe('')
    for (const name of ['x-total-count', 'link', 'content-type', 'api-version']) {
      expect(head.headers.get(name)).toBe(get.headers.get(name))
    }
  })
})

describe('GET /v2/users', () => {
  test('keyset pages by cursor until next_cursor is null', async () => {
    await using t = await makeTestApp()
    await seed(t, 25)
    const first = await t.get('/v2/users?limit=10')
    expect(first.headers.get('api-version')).toBe('2')
    expect(first.body.pagination).toMatchObject({ limit: 10, offset: 0, total: 25 })
    const cursor = first.body.pagination.next_cursor
    expect(cursor).toEqual(expect.any(String))
    expect(linkTargets(first.headers.get('link')).next).toBe(
      `http://localhost/v2/users?limit=10&cursor=${cursor}`,
    )
    const second = await t.get(`/v2/users?limit=10&cursor=${cursor}`)
    expect(ids(second)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
    // A page chosen by cursor does not count the records before it: offset is null.
    expect(second.body.pagination).toMatchObject({ limit: 10, offset: null, total: 25 })
    const third = await t.get(`/v2/users?limit=10&cursor=${second.body.pagination.next_cursor}`)
    expect(ids(third)).toEqual([21, 22, 23, 24, 25])
    expect(third.body.pagination).toEqual({ limit: 10, offset: null, total: 25, next_cursor: null })
    const thirdLinks = linkTargets(third.headers.get('link'))
    expect(thirdLinks.next).toBeUndefined()
    expect(thirdLinks.first).toBe('http://localhost/v2/users?limit=10&offset=0')
    expect(thirdLinks.last).toBe('http://localhost/v2/users?limit=10&offset=20')
  })

  test('prev links walk back by cursor, to a first page with no prev', async () => {
    await using t = await makeTestApp()
    await seed(t, 25)
    const second = await t.get(
      `/v2/users?limit=10&cursor=${(await t.get('/v2/users?limit=10')).body.pagination.next_cursor}`,
    )
    const third = await t.get(`/v2/users?limit=10&cursor=${second.body.pagination.next_cursor}`)
    const back = await follow(t, linkTargets(third.headers.get('link')).prev)
    expect(ids(back)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
    const backLinks = linkTargets(back.headers.get('link'))
    expect(new URL(backLinks.next as string, 'http://x').searchParams.get('cursor')).toBe(
      second.body.pagination.next_cursor,
    )
    const start = await follow(t, backLinks.prev)
    expect(ids(start)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(linkTargets(start.headers.get('link')).prev).toBeUndefined()
    expect(ids(await follow(t, linkTargets(start.headers.get('link')).next))).toEqual(ids(back))
  })

  test('a cursor survives deletes: it points after an id, not at a position', async () => {
    await using t = await makeTestApp()
    await seed(t, 6)
    const first = await t.get('/v2/users?limit=3')
    await t.call('DELETE', '/users/2')
    await t.call('DELETE', '/users/4')
    const next = await t.get(`/v2/users?limit=3&cursor=${first.body.pagination.next_cursor}`)
    expect(ids(next)).toEqual([5, 6])
    expect(next.body.pagination).toMatchObject({ offset: null, total: 4, next_cursor: null })
  })

  test('offset still works, and gives a next_cursor too', async () => {
    await using t = await makeTestApp()
    await seed(t, 30)
    const reply = await t.get('/v2/users?limit=5&offset=10')
    expect(reply.body.data[0].id).toBe(11)
    const next = await t.get(`/v2/users?limit=5&cursor=${reply.body.pagination.next_cursor}`)
    expect(next.body.data[0].id).toBe(16)
  })

  test('email filters exactly, without regard to case; total counts matches', async () => {
    await using t = await makeTestApp()
    await seed(t, 12)
    const reply = await t.get('/v2/users?email=USER11@Example.com')
    expect(reply.body.data.map((u: { id: number }) => u.id)).toEqual([11])
    expect(reply.body.pagination.total).toBe(1)
    expect(reply.headers.get('x-total-count')).toBe('1')
  })

  test('q matches a substring of name or email, with % and _ taken literally', async () => {
    await using t = await makeTestApp()
    await seed(t, 12, (i) => (i === 3 ? 'Grace 100%_sure' : `User ${i}`))
    expect((await t.get('/v2/users?q=user1')).body.pagination.total).toBe(4) // 1, 10, 11, 12
    expect((await t.get('/v2/users?q=grace')).body.data[0].id).toBe(3)
    expect((await t.get('/v2/users?q=%25_')).body.data.map((u: { id: number }) => u.id)).toEqual([
      3,
    ])
    expect((await t.get('/v2/users?q=_')).body.pagination.total).toBe(1)
  })

  test('filters and cursor go together; links repeat the filters', async () => {
    await using t = await makeTestApp()
    await seed(t, 30)
    const first = await t.get('/v2/users?q=user2&limit=5') // 2, 20..29
    expect(first.body.pagination.total).toBe(11)
    const next = linkTargets(first.headers.get('link')).next as string
    expect(next).toContain('q=user2')
    const second = await t.get(next.replace('http://localhost', ''))
    expect(ids(second)).toEqual([24, 25, 26, 27, 28])
    expect(second.body.pagination).toMatchObject({ offset: null, total: 11 })
    const prev = linkTargets(second.headers.get('link')).prev as string
    expect(prev).toContain('q=user2')
    expect(ids(await follow(t, prev))).toEqual([2, 20, 21, 22, 23])
  })

  test('count=none leaves out total, X-Total-Count and the last link, and its links keep it', async () => {
    await using t = await makeTestApp()
    await seed(t, 7)
    const first = await t.get('/v2/users?limit=3&count=none&q=user')
    expect(first.status).toBe(200)
    expect(ids(first)).toEqual([1, 2, 3])
    expect(first.body.pagination).toEqual({ limit: 3, offset: 0, next_cursor: expect.any(String) })
    expect(first.headers.get('x-total-count')).toBeNull()
    const rels = linkTargets(first.headers.get('link'))
    expect(Object.keys(rels).sort()).toEqual(['first', 'next'])
    expect(rels.next).toContain('count=none')
    const second = await follow(t, rels.next)
    expect(ids(second)).toEqual([4, 5, 6])
    expect(second.body.pagination.total).toBeUndefined()
    expect(second.headers.get('x-total-count')).toBeNull()
    // The default counts, and so does count=exact.
    expect((await t.get('/v2/users?count=exact')).headers.get('x-total-count')).toBe('7')
  })

  test('the unfiltered total is the kept count: inserts and deletes by any path move it', async () => {
    await using t = await makeTestApp()
    await seed(t, 4)
    await dbQuery(t.deps, 'DELETE FROM users WHERE id IN (1, 2)')
    await t.post('/users', { name: 'New', email: 'new@example.com' })
    for (const path of ['/users', '/v2/users']) {
      const reply = await t.get(path)
      expect(reply.body.pagination.total).toBe(3)
      expect(reply.headers.get('x-total-count')).toBe('3')
    }
  })

  test('sort=-name pages by Link and cursor, every link keeping the sort, back to the first page', async () => {
    await using t = await makeTestApp()
    const names = ['Noor', 'ada', 'Émile', 'Bea', 'Zoë', 'carl', 'Dana']
    await seed(t, names.length, (i) => names[i - 1] as string)
    const expected = ['Zoë', 'Noor', 'Émile', 'Dana', 'carl', 'Bea', 'ada']
    const first = await t.get('/v2/users?limit=3&sort=-name')
    expect(first.body.data.map((user: { name: string }) => user.name)).toEqual(expected.slice(0, 3))
    const rels = linkTargets(first.headers.get('link'))
    for (const rel of ['first', 'next', 'last']) expect(rels[rel]).toContain('sort=-name')
    const second = await follow(t, rels.next)
    expect(second.body.data.map((user: { name: string }) => user.name)).toEqual(
      expected.slice(3, 6),
    )
    // The last link is an offset in the same sort.
    const last = await follow(t, rels.last)
    expect(last.body.data.map((user: { name: string }) => user.name)).toEqual(['ada'])
    // A cursor sent again without its sort is refused, not read in another order.
    const cursor = second.body.pagination.next_cursor as string
    const bare = expectEnvelope(
      await t.get(`/v2/users?limit=3&cursor=${cursor}`),
      422,
      'VALIDATION_ERROR',
    )
    expect(bare.details).toEqual([
      {
        field: 'cursor',
        message: 'was issued for sort=-name; send that sort with it',
        received: cursor,
      },
    ])
    const back = await follow(t, linkTargets(second.headers.get('link')).prev)
    expect(ids(back)).toEqual(ids(first))
    expect(linkTargets(back.headers.get('link')).prev).toBeUndefined()
  })

  test('a cursor before every match is the first page: no prev link', async () => {
    await using t = await makeTestApp()
    await seed(t, 5)
    const after1 = `/v2/users?limit=2&cursor=${Buffer.from('a:1').toString('base64url')}`
    expect(ids(await t.get(after1))).toEqual([2, 3])
    expect(
      ids(await follow(t, linkTargets((await t.get(after1)).headers.get('link')).prev)),
    ).toEqual([1])
    await dbQuery(t.deps, 'DELETE FROM users WHERE id = 1')
    expect(linkTargets((await t.get(after1)).headers.get('link')).prev).toBeUndefined()
  })

  test.each([
    ['cursor=%%%', 'cursor'],
    ['cursor=abc', 'cursor'],
    [`cursor=${Buffer.from('a:-1').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:01').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:5:name').toString('base64url')}&sort=name`, 'cursor'],
    [`cursor=${Buffer.from('a:5:-id:x').toString('base64url')}&sort=-id`, 'cursor'],
    [`cursor=${Buffer.from('a:5:created:x').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:5:name:a\u0000b').toString('base64url')}&sort=name`, 'cursor'],
    [`cursor=${Buffer.from('a:5:name:ada').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:5').toString('base64url')}&sort=-id`, 'cursor'],
    ['sort=Name', 'sort'],
    ['sort=created_at', 'sort'],
    ['sort=name&sort=email', 'sort'],
    ['sort=%2Bname', 'sort'],
    [`cursor=${Buffer.from('a:1.5').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('x:5').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:99999999999999999').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('a:1').toString('base64url')}&offset=5`, 'offset'],
    [`q=${'x'.repeat(201)}`, 'q'],
    [`email=${'x'.repeat(255)}`, 'email'],
    ['q=a&q=b', 'q'],
    ['count=None', 'count'],
    ['count=planned', 'count'],
    ['count=none&count=exact', 'count'],
  ])('?%s is a VALIDATION_ERROR for %s', async (query, field) => {
    await using t = await makeTestApp()
    const error = expectEnvelope(await t.get(`/v2/users?${query}`), 422, 'VALIDATION_ERROR')
    expect(error.details.map((d) => d.field)).toEqual([field])
  })
})
