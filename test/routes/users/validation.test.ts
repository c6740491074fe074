import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../../helpers/app'

const valid = { name: 'Ada', email: 'ada@example.com' }

async function rejected(body: unknown) {
  await using t = await makeTestApp()
  const reply = await t.post('/users', body)
  const error = expectEnvelope(reply, 422, 'VALIDATION_ERROR')
  expect((await t.get('/users')).body.pagination.total).toBe(0)
  return error.details
}

describe('POST /users validation', () => {
  test('lists every bad field, with plain names and the received text', async () => {
    const details = await rejected({
      name: 7,
      email: 'not-an-email',
      extra: true,
      password: 'short',
    })
    expect(details).toEqual([
      { field: 'extra', message: 'is not a known field', received: 'true' },
      {
        field: 'name',
        message:
          'must be 1–200 characters after trimming, with no control characters, bidirectional controls or invisible characters',
        received: '7',
      },
      {
        field: 'email',
        message: 'must be a valid email address of at most 254 characters',
        received: 'not-an-email',
      },
      { field: 'password', message: 'must be 8–128 characters', received: '[redacted]' },
    ])
  })

  test('missing fields are named with an empty received value', async () => {
    expect(await rejected({})).toEqual([
      { field: 'name', message: 'is required', received: '' },
      { field: 'email', message: 'is required', received: '' },
    ])
  })

  test.each([
    ['empty', ''],
    ['blank', '   '],
    ['a tab', 'Ada\tLovelace'],
    ['a newline', 'Ada\n'],
    ['NUL', 'Ada\u0000'],
    ['DEL', 'Ada\u007f'],
    ['a C1 control', 'Ada\u0085'],
    ['a lone surrogate', 'Ada\ud800'],
    ['201 characters', 'x'.repeat(201)],
    ['300 characters', 'n'.repeat(300)],
    ['an array', ['Ada']],
    ['an object', { first: 'Ada' }],
    ['null', null],
    ['true', true],
  ])('refuses a name that is %s', async (_label, name) => {
    const details = await rejected({ ...valid, name })
    expect(details.map((d) => d.field)).toEqual(['name'])
  })

  test.each([
    ['200 characters', 'x'.repeat(200)],
    ['200 emoji (code points, not UTF-16 units)', '😀'.repeat(200)],
    ['spaces around it', `  ${'y'.repeat(200)}  `],
    ['accents and scripts', 'Zoë Ελένη 李'],
  ])('accepts a name of %s', async (_label, name) => {
    await using t = await makeTestApp()
    const reply = await t.post('/users', { ...valid, name })
    expect(reply.status).toBe(201)
    expect(reply.body.name).toBe((name as string).trim())
  })

  test.each([
    ['no @', 'ada.example.com'],
    ['no domain dot', 'ada@localhost'],
    ['spaces', 'ada @example.com'],
    ['255 characters', `${'a'.repeat(243)}@example.com`],
    ['a number', 42],
    ['empty', ''],
  ])('refuses an email with %s', async (_label, email) => {
    const details = await rejected({ ...valid, email })
    expect(details.map((d) => d.field)).toEqual(['email'])
  })

  test('accepts an email of exactly 254 characters', async () => {
    await using t = await makeTestApp()
    const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`
    expect(email.length).toBe(254)
    expect((await t.post('/users', { ...valid, email })).status).toBe(201)
  })

  test('cuts received to 200 characters', async () => {
    const details = await rejected({ ...valid, name: 'z'.repeat(5000) })
    expect(details[0]?.received).toBe('z'.repeat(200))
  })

  test('never echoes a password, even a very wrong one', async () => {
    await using t = await makeTestApp()
    for (const password of ['tiny', 'p'.repeat(129), 12345678, ['secret-in-array-xyz']]) {
      const reply = await t.post('/users', { ...valid, password })
      expectEnvelope(reply, 422, 'VALIDATION_ERROR')
      // The same placeholder whatever the password: nothing of it, not even its length.
      expect(reply.body.error.details).toEqual([
        { field: 'password', message: 'must be 8–128 characters', received: '[redacted]' },
      ])
      expect(reply.text).not.toContain('secret-in-array-xyz')
      expect(reply.text).not.toContain('tiny')
    }
    expect(t.log.lines.join('')).not.toContain('secret-in-array-xyz')
  })

  test('__proto__ is an unknown field, and pollutes nothing', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body: '{"name":"Ada","email":"ada@example.com","__proto__":{"admin":true}}',
      headers: { 'content-type': 'application/json' },
    })
    const error = expectEnvelope(reply, 422, 'VALIDATION_ERROR')
    expect(error.details[0]?.field).toBe('__proto__')
    expect(({} as Record<string, unknown>).admin).toBeUndefined()
  })

  test('constructor and prototype keys are refused, naming the first', async () => {
    const details = await rejected({ ...valid, constructor: { prototype: {} }, prototype: 1 })
    expect(details.map((d) => d.field)).toEqual(['constructor'])
  })

  test.each([
    ['an array', '[]', 'body'],
    ['a string', '"Ada"', 'body'],
    ['a number', '42', 'body'],
    ['null', 'null', 'body'],
  ])('a body that is %s is a VALIDATION_ERROR for body', async (_label, text, field) => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body: text,
      headers: { 'content-type': 'application/json' },
    })
    expect(expectEnvelope(reply, 422, 'VALIDATION_ERROR').details[0]?.field).toBe(field)
  })

  test('deeply nested JSON is answered, not crashed on', async () => {
    await using t = await makeTestApp()
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    const reply = await t.call('POST', '/users', {
      body: `{"name":${deep},"email":"a@b.co"}`,
      headers: { 'content-type': 'application/json' },
    })
    expect([400, 422]).toContain(reply.status)
    expectEnvelope(reply, reply.status, reply.status === 400 ? 'BAD_REQUEST' : 'VALIDATION_ERROR')
  })
})

describe('bodies that are not JSON', () => {
  test.each([
    ['{oops', 'malformed'],
    ['{"name":"Ada",}', 'trailing comma'],
    ['', 'empty'],
    ['\u00ff\u00fe', 'garbage bytes'],
  ])('%p (%s) is 400 BAD_REQUEST', async (body) => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body,
      headers: { 'content-type': 'application/json' },
    })
    expectEnvelope(reply, 400, 'BAD_REQUEST')
  })

  test.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/vnd.api+json',
  ])('Content-Type %p is 415', async (type) => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body: JSON.stringify(valid),
      headers: { 'content-type': type },
    })
    expectEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE')
    expect((await t.get('/users')).body.pagination.total).toBe(0)
  })

  test('no Content-Type at all is 415', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', { body: JSON.stringify(valid) })
    expectEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('charset and letter case in the media type are accepted', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body: JSON.stringify(valid),
      headers: { 'content-type': 'Application/JSON; charset=utf-8' },
    })
    expect(reply.status).toBe(201)
  })

  test('merge-patch+json is for PATCH only', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('POST', '/users', {
      body: JSON.stringify(valid),
      headers: { 'content-type': 'application/merge-patch+json' },
    })
    expectEnvelope(reply, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a JSON body over 1 MiB is 413 and stores nothing', async () => {
    await using t = await makeTestApp()
    const reply = await t.post('/users', { ...valid, name: 'x'.repeat(1024 * 1024) })
    expectEnvelope(reply, 413, 'PAYLOAD_TOO_LARGE')
    expect((await t.get('/users')).body.pagination.total).toBe(0)
  })

  test('a chunked body over 1 MiB (no Content-Length) is 413', async () => {
    await using t = await makeTestApp()
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024))
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode('{"name":"'))
        controller.enqueue(chunk)
        sent += chunk.byteLength
        if (sent > 2 * 1024 * 1024) controller.close()
      },
    })
    const response = await t.app.handle(
      new Request('http://localhost/users', {
        method: 'POST',
        body: stream,
        headers: { 'content-type': 'application/json' },
      }),
    )
    expect(response.status).toBe(413)
  })
})
