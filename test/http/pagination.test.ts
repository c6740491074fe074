import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { linkTargets } from '../helpers/links'
import { multipartBody, multipartType } from '../helpers/multipart'

// Offset lists in creation order (http/pagination.ts's offsetPageAnswer with `usually`): the
// usual end first, `sort` turns them around, and every link keeps what was asked.

const CHRONOLOGICAL_LISTS = [
  '/api-keys',
  '/groups',
  '/webhook-endpoints',
  '/uploads',
  '/mail',
  '/webhooks/events',
] as const

async function upload(t: TestApp, name: string) {
  const reply = await t.call('POST', '/upload', {
    body: multipartBody([{ name: 'file', filename: name, data: Buffer.from(name) }]),
    headers: { 'content-type': multipartType() },
  })
  expect(reply.status).toBe(201)
}

describe('lists in creation order', () => {
  test('groups: oldest first; sort=-created turns the list around and its links keep the sort', async () => {
    await using t = await makeTestApp()
    for (const name of ['one', 'two', 'three'])
      await t.deps.groups.create({ name, description: null }, SYSTEM)
    const names = (reply: { body: { data: { name: string }[] } }) =>
      reply.body.data.map((group) => group.name)
    expect(names(await t.get('/groups'))).toEqual(['one', 'two', 'three'])
    expect(names(await t.get('/groups?sort=created'))).toEqual(['one', 'two', 'three'])
    const newest = await t.get('/groups?sort=-created&limit=2')
    expect(names(newest)).toEqual(['three', 'two'])
    expect(newest.body.pagination).toEqual({ limit: 2, offset: 0, total: 3 })
    const links = linkTargets(newest.headers.get('link'))
    for (const rel of ['first', 'next', 'last']) expect(links[rel]).toContain('sort=-created')
    const next = await t.get((links.next as string).replace('http://localhost', ''))
    expect(names(next)).toEqual(['one'])
    // The usual order's links stay as they were.
    expect((await t.get('/groups')).headers.get('link')).not.toContain('sort=')
  })

  test('uploads: newest first; sort=created turns the list around', async () => {
    await using t = await makeTestApp()
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await upload(t, name)
    const files = (reply: { body: { data: { files: { filename: string }[] }[] } }) =>
      reply.body.data.map((each) => each.files[0]?.filename)
    const headers = { 'x-api-key': await apiKey(t) }
    expect(files(await t.get('/uploads', { headers }))).toEqual(['c.txt', 'b.txt', 'a.txt'])
    const oldest = await t.get('/uploads?sort=created&offset=1', { headers })
    expect(files(oldest)).toEqual(['b.txt', 'c.txt'])
  })

  test.each(CHRONOLOGICAL_LISTS)(
    '%s: a sort it does not have is a VALIDATION_ERROR for sort',
    async (path) => {
      await using t = await makeTestApp()
      const headers = { 'x-api-key': await apiKey(t) }
      for (const sort of ['name', 'Created', '+created', '-created&sort=created']) {
        const reply = await t.get(`${path}?sort=${sort}`, { headers })
        const error = expectEnvelope(reply, 422, 'VALIDATION_ERROR')
        expect(error.details.map((detail) => detail.field)).toEqual(['sort'])
      }
      for (const sort of ['created', '-created'])
        expect((await t.get(`${path}?sort=${sort}`, { headers })).status).toBe(200)
    },
  )
})
