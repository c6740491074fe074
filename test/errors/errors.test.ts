import { describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { receivedText } from '../../src/errors/details'
import { ERROR_CODES } from '../../src/errors/errors'
import { dbQuery, expectEnvelope, makeTestApp } from '../helpers/app'

describe('the error envelope', () => {
  test('an unknown route is 404 NOT_FOUND, also under /v1 and /v2, and /v3 does not exist', async () => {
    await using t = await makeTestApp()
    for (const path of [
      '/nope',
      '/v1/nope',
      '/v2/nope',
      '/v3/users',
      '/v3/users/1',
      '/v0/health',
    ]) {
      const error = expectEnvelope(await t.get(path), 404, 'NOT_FOUND')
      expect(error.details).toEqual([])
    }
  })

  test('a known route with the wrong method is 405 with Allow', async () => {
    await using t = await makeTestApp()
    const cases: [string, string, string][] = [
      ['DELETE', '/users', 'GET, HEAD, POST, OPTIONS'],
      ['POST', '/users/1', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
      ['PUT', '/v2/users', 'GET, HEAD, POST, OPTIONS'],
      ['POST', '/health', 'GET, HEAD, OPTIONS'],
      ['POST', '/users/abc', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
    ]
    for (const [method, path, allow] of cases) {
      const reply = await t.call(method, path)
      expectEnvelope(reply, 405, 'METHOD_NOT_ALLOWED')
      expect(reply.headers.get('allow')).toBe(allow)
    }
  })

  test('documentation_url is absolute, from the request host or --public-url', async () => {
    {
      // Protected: an open roster answers only its own host names (421 for this one).
      await using t = await makeTestApp({ usersAccess: 'protected' })
      const reply = await t.app.handle(new Request('http://api.internal:9000/nope'))
      const body = (await reply.json()) as { error: { documentation_url: string } }
      expect(body.error.documentation_url).toBe('http://api.internal:9000/docs/errors#NOT_FOUND')
    }
    {
      await using t = await makeTestApp({ publicUrl: 'https://roster.example.com' })
      const error = expectEnvelope(await t.get('/nope'), 404, 'NOT_FOUND')
      expect(error.documentation_url).toBe('https://roster.example.com/docs/errors#NOT_FOUND')
    }
  })

  test('an unexpected exception is 500 INTERNAL_ERROR with no stack and no SQL, and is logged', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    await dbQuery(
      t.deps,
      t.deps.config.databaseUrl === null ? 'DROP TABLE users' : 'DROP TABLE users CASCADE',
    )
    const reply = await t.get('/users/1', { headers: { 'x-request-id': 'trace-500' } })
    const error = expectEnvelope(reply, 500, 'INTERNAL_ERROR')
    expect(error.message).toBe('Something went wrong inside roster')
    expect(reply.text).not.toMatch(/no such table|users|sqlite|\.ts/i)
    const logged = t.log.lines.find((line) => line.includes('trace-500'))
    expect(JSON.parse(logged as string)).toMatchObject({
      level: 'error',
      request_id: 'trace-500',
      error: expect.stringMatching(/no such table|does not exist/),
    })
  })

  test('/docs/errors lists every code with an anchor', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/docs/errors')
    expect(reply.status).toBe(200)
    expect(reply.headers.get('content-type')).toStartWith('text/html')
    for (const [code, { status }] of Object.entries(ERROR_CODES)) {
      expect(reply.text).toContain(`id="${code}"`)
      expect(reply.text).toContain(`HTTP ${status}`)
    }
  })
})

describe('request ids', () => {
  test('every answer carries X-Request-Id, and errors repeat it as request_id', async () => {
    await using t = await makeTestApp()
    for (const path of ['/health', '/users', '/nope', '/users/abc']) {
      const reply = await t.get(path)
      expect(reply.headers.get('x-request-id')).toMatch(/^req_[a-z0-9]+$/)
    }
    const a = await t.get('/nope')
    const b = await t.get('/nope')
    expect(a.body.request_id).not.toBe(b.body.request_id)
  })

  test("the caller's id is kept when it is 1-128 of [A-Za-z0-9._-]", async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/nope', { headers: { 'x-request-id': 'Abc.1_2-3' } })
    expect(reply.headers.get('x-request-id')).toBe('Abc.1_2-3')
    expect(reply.body.request_id).toBe('Abc.1_2-3')
    expect(
      (await t.get('/users', { headers: { 'x-request-id': 'x'.repeat(128) } })).headers.get(
        'x-request-id',
      ),
    ).toBe('x'.repeat(128))
  })

  test.each(['x'.repeat(129), 'has space', 'semi;colon', '<script>', 'ünï'])(
    'an unsafe id %p is replaced by a generated one',
    async (id) => {
      await using t = await makeTestApp()
      const reply = await t.get('/nope', { headers: { 'x-request-id': id } })
      expect(reply.headers.get('x-request-id')).toMatch(/^req_/)
      expect(reply.text).not.toContain(id)
    },
  )
})

describe('API-Version', () => {
  test('unversioned and /v1 answer API-Version 1, /v2 answers 2, errors included', async () => {
    await using t = await makeTestApp()
    expect((await t.get('/users')).headers.get('api-version')).toBe('1')
    expect((await t.get('/v1/users')).headers.get('api-version')).toBe('1')
    expect((await t.get('/v2/users')).headers.get('api-version')).toBe('2')
    expect((await t.get('/v2/users/77')).headers.get('api-version')).toBe('2')
    expect((await t.get('/v2/users?limit=0')).headers.get('api-version')).toBe('2')
    expect((await t.get('/v2')).headers.get('api-version')).toBe('2')
    expect((await t.get('/v20/users')).headers.get('api-version')).toBe('1')
  })

  test('/health exists unversioned, under /v1 and under /v2', async () => {
    await using t = await makeTestApp()
    for (const path of ['/health', '/v1/health', '/v2/health']) {
      expect((await t.get(path)).status).toBe(200)
    }
  })
})

describe('receivedText', () => {
  test('cuts to 200 characters without splitting a surrogate pair', () => {
    expect(receivedText(`${'a'.repeat(199)}😀`)).toBe('a'.repeat(199))
    expect(receivedText('b'.repeat(300))).toHaveLength(200)
  })

  test('previews hostile structures cheaply and within the limit', () => {
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(receivedText(deep)).toBe('[[[[[[[[[…]]]]]]]]]')
    expect(receivedText({ a: 'x'.repeat(1_000_000) })).toHaveLength(200)
    expect(receivedText(Array.from({ length: 100_000 }, (_, i) => i))).toHaveLength(200)
    expect(receivedText(7)).toBe('7')
    expect(receivedText(null)).toBe('null')
    expect(receivedText(undefined)).toBeUndefined()
  })
})

describe('the error handler', () => {
  test('an error class with its own `code` field still becomes the envelope (Elysia pitfall)', async () => {
    const { errorHandler } = await import('../../src/http/error-handler')
    const { RouteTable } = await import('../../src/http/route-table')
    const { memoryLogger } = await import('../../src/log')
    class Odd extends Error {
      code = 'ODD'
    }
    const log = memoryLogger()
    const app = new Elysia()
      .use(errorHandler({ publicUrl: null, routes: new RouteTable(), log }))
      .get('/odd', () => {
        throw new Odd('secret internals')
      })
    const reply = await app.handle(new Request('http://localhost/odd'))
    expect(reply.status).toBe(500)
    expect(await reply.text()).not.toContain('secret internals')
    expect(log.lines.join('')).toContain('secret internals')
  })
})

describe('every detail has field, message and received, as strings', () => {
  test('absent fields, secrets, 409s, an Idempotency-Key reused, /login, webhooks and uploads', async () => {
    const { PASSWORD, form } = await import('../helpers/auth')
    const { multipartBody, multipartType } = await import('../helpers/multipart')
    const { STRIPE_SECRET, stripeHeaders } = await import('../helpers/webhooks')
    await using t = await makeTestApp({ webhookSecrets: [STRIPE_SECRET] })
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    await t.post('/users', { name: 'Bob', email: 'bob@example.com' })
    const json = (body: string) => ({ body, headers: { 'content-type': 'application/json' } })
    const deliver = async (body: string) =>
      t.call('POST', '/webhooks', {
        body,
        headers: { 'content-type': 'application/json', ...(await stripeHeaders(body)) },
      })
    const cases: [string, Awaited<ReturnType<typeof t.call>>, [string, string][]][] = [
      ['POST /users without email', await t.post('/users', { name: 'Eve' }), [['email', '']]],
      [
        'POST /users without name',
        await t.post('/users', { email: 'e@example.com' }),
        [['name', '']],
      ],
      [
        'PUT without email',
        await t.call('PUT', '/users/1', { json: { name: 'Ada' } }),
        [['email', '']],
      ],
      [
        'a short password',
        await t.post('/users', { name: 'Eve', email: 'e@example.com', password: 'short' }),
        [['password', '[redacted]']],
      ],
      [
        '409 on POST',
        await t.post('/users', { name: 'Ada', email: 'ADA@example.com' }),
        [['email', 'ADA@example.com']],
      ],
      [
        '409 on PATCH',
        await t.call('PATCH', '/users/2', { json: { email: 'ada@EXAMPLE.com' } }),
        [['email', 'ada@EXAMPLE.com']],
      ],
      [
        'an Idempotency-Key reused with another body',
        await (async () => {
          const headers = { 'idempotency-key': 'key-1' }
          await t.post('/users', { name: 'Cy', email: 'cy@example.com' }, { headers })
          return t.post('/users', { name: 'Di', email: 'di@example.com' }, { headers })
        })(),
        [['Idempotency-Key', 'key-1']],
      ],
      [
        'POST /login without identifier',
        await t.call('POST', '/login', form({ password: PASSWORD })),
        [['email', '']],
      ],
      [
        'POST /login without password',
        await t.call('POST', '/login', form({ email: 'ada@example.com' })),
        [['password', '']],
      ],
      [
        'a webhook event without data.object',
        await deliver(JSON.stringify({ id: 'evt_1', type: 'x', data: {} })),
        [['data.object', '']],
      ],
      [
        'a webhook event of the wrong shape',
        await deliver(JSON.stringify({ id: 'evt_2', type: 7, data: { object: 'x' } })),
        [
          ['type', '7'],
          ['data.object', 'x'],
        ],
      ],
      [
        'a multipart upload with no file part',
        await t.call('POST', '/upload', {
          body: multipartBody([{ name: 'description', data: 'no file' }]),
          headers: { 'content-type': multipartType() },
        }),
        [['file', '']],
      ],
      [
        'a JSON key given twice',
        await t.call('POST', '/users', json('{"name":"A","email":"a@x.io","email":"b@x.io"}')),
        [['email', '']],
      ],
    ]
    for (const [name, reply, expected] of cases) {
      const details = reply.body?.error?.details as Record<string, unknown>[]
      for (const detail of details) {
        expect({
          name,
          keys: Object.keys(detail).sort(),
          types: Object.values(detail).map((v) => typeof v),
        }).toEqual({
          name,
          keys: ['field', 'message', 'received'],
          types: ['string', 'string', 'string'],
        })
      }
      expect({ name, details: details.map((d) => [d.field, d.received]) }).toEqual({
        name,
        details: expected,
      })
    }
  })
})
