import { describe, expect, test } from 'bun:test'
import { mountOf } from '../../src/http/request-context'
import { makeTestApp } from '../helpers/app'

const MOUNTS = ['', '/v1', '/v2'] as const

describe('one route module serves every mount', () => {
  test('the mount is read from the request’s path, not guessed from a lookalike', () => {
    expect(mountOf('http://localhost/users')).toBe('')
    expect(mountOf('http://localhost/v1/users?limit=2')).toBe('/v1')
    expect(mountOf('http://localhost/v2/groups/3')).toBe('/v2')
    expect(mountOf('/v2/users')).toBe('/v2')
    expect(mountOf('http://localhost/v10/users')).toBe('')
    expect(mountOf('http://localhost/v3/users')).toBe('')
    expect(mountOf('http://localhost/vx/users')).toBe('')
    expect(mountOf('http://localhost/')).toBe('')
  })

  test('a group made through each mount is located under that mount', async () => {
    await using t = await makeTestApp()
    for (const [index, mount] of MOUNTS.entries()) {
      const reply = await t.post(`${mount}/groups`, { name: `Team ${index}` })
      expect(reply.status).toBe(201)
      expect(reply.headers.get('location')).toBe(`${mount}/groups/${reply.body.id}`)
    }
  })

  test('list links stay under the mount the list was asked through', async () => {
    await using t = await makeTestApp()
    await t.post('/groups', { name: 'One' })
    await t.post('/groups', { name: 'Two' })
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    await t.post('/users', { name: 'Bob', email: 'bob@example.com' })
    for (const mount of MOUNTS) {
      for (const list of ['/groups', '/users']) {
        const link = (await t.get(`${mount}${list}?limit=1`)).headers.get('link') ?? ''
        expect(link).toContain(`${mount}${list}?`)
        if (mount === '') expect(link).not.toMatch(/\/v[12]\//)
      }
    }
  })

  test('an upload’s Location and file URLs stay under the mount it was sent through', async () => {
    await using t = await makeTestApp()
    for (const mount of MOUNTS) {
      const reply = await t.call('POST', `${mount}/upload?public=true`, {
        body: 'hello',
        headers: { 'content-type': 'application/octet-stream' },
      })
      expect(reply.status).toBe(201)
      expect(reply.headers.get('location')).toBe(`${mount}/uploads/${reply.body.id}`)
      expect(reply.body.files[0].url).toStartWith(`${mount}/files/`)
      const again = await t.get(`${mount}/uploads/${reply.body.id}`)
      expect(again.body.files[0].url).toBe(reply.body.files[0].url)
      const file = await t.get(again.body.files[0].url)
      expect(file.status).toBe(200)
    }
  })

  test('v1 and v2 keep their own users list while sharing every other route', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    expect((await t.get('/v1/users')).body.pagination).not.toHaveProperty('next_cursor')
    expect((await t.get('/v2/users')).body.pagination).toHaveProperty('next_cursor', null)
    expect((await t.get('/users')).body).toEqual((await t.get('/v1/users')).body)
  })
})
