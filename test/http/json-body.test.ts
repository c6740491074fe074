import { describe, expect, test } from 'bun:test'
import { duplicateKey } from '../../src/http/json-body'
import { expectEnvelope, makeTestApp } from '../helpers/app'
import { apiKey, PASSWORD } from '../helpers/auth'

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))),
  )

describe('duplicateKey', () => {
  test('finds a key given twice at any depth, named by its path; escapes count as the same key', () => {
    expect(duplicateKey('{"a":1,"b":2}')).toBeNull()
    expect(duplicateKey('{"email":"a@x","email":"b@x"}')).toBe('email')
    expect(duplicateKey('{"e\\u006dail":"a@x","email":"b@x"}')).toBe('email')
    expect(duplicateKey('{"address":{"city":"A","city":"B"}}')).toBe('address.city')
    expect(duplicateKey('{"items":[{"n":1},{"n":2,"n":3}]}')).toBe('items.1.n')
    // The same key in sibling objects, in strings, or as a value is no duplicate.
    expect(duplicateKey('{"a":{"x":1},"b":{"x":1}}')).toBeNull()
    expect(duplicateKey('{"a":"\\"a\\":1,\\"a\\":2","b":"a"}')).toBeNull()
    expect(duplicateKey('{"a":"x\\\\","b":"a","c":["a","a"]}')).toBeNull()
    expect(duplicateKey('{"a":1,"b":{"c":[1,{"a":2}]},"a":3}')).toBe('a')
  })
})

describe('JSON bodies are what they claim', () => {
  test('invalid UTF-8 is a 400 on every JSON route, and nothing is stored', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const invalid = bytes('{"name":"A', [0xff, 0xfe], 'B","email":"bad@example.com"}')
    const created = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const cases: [string, string, Record<string, string>][] = [
      ['POST', '/users', {}],
      ['PUT', `/users/${created.body.id}`, {}],
      ['PATCH', `/users/${created.body.id}`, {}],
      ['POST', '/api-keys', { 'x-api-key': key }],
      ['POST', '/login', {}],
    ]
    for (const [method, path, headers] of cases) {
      const reply = await t.call(method, path, {
        body: invalid,
        headers: { 'content-type': 'application/json', ...headers },
      })
      expect({ path, status: reply.status }).toEqual({ path, status: 400 })
      expect(expectEnvelope(reply, 400, 'BAD_REQUEST').message).toContain('UTF-8')
    }
    expect((await t.get('/users')).body.pagination.total).toBe(1)
    expect((await t.get(`/users/${created.body.id}`)).body.name).toBe('Ada')
  })

  test('an empty body with the right type is a 400 saying it is empty, with or without a Content-Length', async () => {
    await using t = await makeTestApp()
    const created = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const cases: [string, string, string][] = [
      ['POST', '/users', 'application/json'],
      ['PATCH', `/users/${created.body.id}`, 'application/merge-patch+json'],
      ['POST', '/login', 'application/json'],
      ['POST', '/login', 'application/x-www-form-urlencoded'],
    ]
    for (const [method, path, type] of cases) {
      for (const body of [undefined, '', '  \n']) {
        const reply = await t.call(method, path, { body, headers: { 'content-type': type } })
        expect({ path, type, body, status: reply.status }).toEqual({
          path,
          type,
          body,
          status: 400,
        })
        expect(expectEnvelope(reply, 400, 'BAD_REQUEST').message).toContain('empty')
      }
    }
    // Without a type it stays a 415: the type is what is missing.
    expectEnvelope(await t.call('POST', '/users'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    expect((await t.get('/users')).body.pagination.total).toBe(1)
  })

  test('a charset other than UTF-8 is a 415; utf-8 in any spelling is fine', async () => {
    await using t = await makeTestApp()
    const body = JSON.stringify({ name: 'Zoë', email: 'zoe@example.com' })
    for (const type of [
      'application/json; charset=iso-8859-1',
      'application/json;charset="windows-1252"',
      'application/json; charset=utf-16',
    ]) {
      const reply = await t.call('POST', '/users', { body, headers: { 'content-type': type } })
      expectEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE')
      const login = await t.call('POST', '/login', {
        body: JSON.stringify({ email: 'zoe@example.com', password: PASSWORD }),
        headers: { 'content-type': type },
      })
      expectEnvelope(login, 415, 'UNSUPPORTED_MEDIA_TYPE')
    }
    expect((await t.get('/users')).body.pagination.total).toBe(0)
    for (const [n, type] of [
      'application/json; charset=utf-8',
      'application/json; charset=UTF-8',
      'application/json;charset="utf-8"',
      'application/json; charset=utf8',
    ].entries()) {
      const reply = await t.call('POST', '/users', {
        body: JSON.stringify({ name: 'Zoë', email: `zoe${n}@example.com` }),
        headers: { 'content-type': type },
      })
      expect(reply.status).toBe(201)
      expect(reply.body.name).toBe('Zoë')
    }
  })

  test('a key given twice is a 422 naming the field; /login does not pick one', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'a@example.com', password: PASSWORD })
    await t.post('/users', { name: 'Bob', email: 'b@example.com', password: PASSWORD })
    const twice = '{"name":"Eve","email":"e1@example.com","email":"e2@example.com"}'
    const reply = await t.call('POST', '/users', {
      body: twice,
      headers: { 'content-type': 'application/json' },
    })
    const error = expectEnvelope(reply, 422, 'VALIDATION_ERROR')
    expect(error.details.map((detail) => detail.field)).toEqual(['email'])
    expect((await t.get('/users')).body.pagination.total).toBe(2)
    const login = await t.call('POST', '/login', {
      body: `{"email":"a@example.com","email":"b@example.com","password":"${PASSWORD}"}`,
      headers: { 'content-type': 'application/json' },
    })
    expect(expectEnvelope(login, 422, 'VALIDATION_ERROR').details[0]?.field).toBe('email')
    const nested = await t.call('PATCH', '/users/1', {
      body: '{"name":"A","name":"B"}',
      headers: { 'content-type': 'application/merge-patch+json' },
    })
    expect(expectEnvelope(nested, 422, 'VALIDATION_ERROR').details[0]?.field).toBe('name')
    expect((await t.get('/users/1')).body.name).toBe('Ada')
  })
})
