import { describe, expect, test } from 'bun:test'
import { dbQuery, expectEnvelope, makeTestApp, storedFiles, type TestApp } from '../../helpers/app'
import { apiKey, PASSWORD, signedIn } from '../../helpers/auth'
import {
  multipartBody,
  multipartType,
  type Part,
  randomBytes,
  sha256,
} from '../../helpers/multipart'

const upload = (
  t: TestApp,
  parts: Part[],
  headers: Record<string, string> = {},
  path = '/upload',
) =>
  t.call('POST', path, {
    body: multipartBody(parts),
    headers: { 'content-type': multipartType(), ...headers },
  })

const raw = (
  t: TestApp,
  data: Uint8Array<ArrayBuffer> | string,
  query = '',
  headers: Record<string, string> = {},
) =>
  t.call('POST', `/upload${query}`, {
    body: data,
    headers: { 'content-type': 'application/octet-stream', ...headers },
  })

/** Files in the upload dir and rows in the tables: what must be empty after a refused upload. */
async function stored(t: TestApp) {
  const files = await storedFiles(t.deps)
  const count = async (table: string) =>
    (await dbQuery<{ n: number }>(t.deps, `SELECT CAST(count(*) AS INTEGER) AS n FROM ${table}`))[0]
      ?.n
  return {
    files: files.placed.length,
    incoming: files.pending.length,
    uploadRows: await count('uploads'),
    fileRows: await count('files'),
  }
}

const NOTHING = { files: 0, incoming: 0, uploadRows: 0, fileRows: 0 }

describe('POST /upload (multipart)', () => {
  test('several files with binary content: 201 with sizes and SHA-256, byte-exact downloads', async () => {
    await using t = await makeTestApp()
    const image = randomBytes(150_000)
    const reply = await upload(t, [
      { name: 'file', filename: 'photo.png', contentType: 'image/png', data: image },
      { name: 'notes', filename: 'notes.txt', contentType: 'text/plain', data: 'hello\n' },
      { name: 'description', data: 'holiday' },
      { name: 'public', data: 'True' },
    ])
    expect(reply.status).toBe(201)
    expect(reply.headers.get('location')).toBe(`/uploads/${reply.body.id}`)
    expect(reply.body).toEqual({
      id: expect.stringMatching(/^upl_[A-Za-z0-9_-]{22}$/),
      description: 'holiday',
      public: true,
      created_at: expect.any(String),
      files: [
        {
          id: expect.stringMatching(/^fil_/),
          field: 'file',
          filename: 'photo.png',
          content_type: 'image/png',
          size: 150_000,
          sha256: sha256(image),
          url: `/files/${reply.body.files[0].id}`,
        },
        expect.objectContaining({
          field: 'notes',
          filename: 'notes.txt',
          size: 6,
          sha256: sha256('hello\n'),
        }),
      ],
    })
    const download = await t.app.handle(new Request(`http://localhost${reply.body.files[0].url}`))
    expect(download.status).toBe(200)
    expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(sha256(image))
    expect(download.headers.get('content-type')).toBe('image/png')
    expect(download.headers.get('content-length')).toBe('150000')
    expect(await stored(t)).toEqual({ files: 2, incoming: 0, uploadRows: 1, fileRows: 2 })
  })

  test('public defaults to false; description is optional; versioned paths keep their prefix', async () => {
    await using t = await makeTestApp()
    const reply = await upload(
      t,
      [{ name: 'file', filename: 'a.txt', data: 'a' }],
      {},
      '/v2/upload',
    )
    expect(reply.body).toMatchObject({ public: false, description: null })
    expect(reply.headers.get('location')).toStartWith('/v2/uploads/')
    expect(reply.body.files[0].url).toStartWith('/v2/files/')
  })

  test.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\x\\y.txt', 'y.txt'],
    ['unicodé-文件-🚀.txt', 'unicodé-文件-🚀.txt'],
  ])(
    'the hostile filename %p is stored as metadata %p; the file lands under a generated name',
    async (name, cleaned) => {
      await using t = await makeTestApp()
      const reply = await upload(t, [{ name: 'file', filename: name, data: 'x' }])
      expect(reply.status).toBe(201)
      expect(reply.body.files[0].filename).toBe(cleaned)
      expect((await storedFiles(t.deps)).placed).toEqual([reply.body.files[0].id])
    },
  )

  test('a NUL byte in the name (percent-encoded in filename*) is stripped; raw in the header it is a 400', async () => {
    await using t = await makeTestApp()
    const encoded = `x"; filename*=UTF-8''nul%00byte%0A.txt; dummy="`
    const reply = await upload(t, [{ name: 'file', filename: encoded, data: 'x' }])
    expect(reply.status).toBe(201)
    expect(reply.body.files[0].filename).toBe('nulbyte.txt')
    const rawNul = await upload(t, [{ name: 'file', filename: 'nul\u0000byte.txt', data: 'x' }])
    expectEnvelope(rawNul, 400, 'BAD_REQUEST')
    expect(await stored(t)).toEqual({ files: 1, incoming: 0, uploadRows: 1, fileRows: 1 })
  })

  test('a 1,000-character filename is cut to 255 characters', async () => {
    await using t = await makeTestApp()
    const reply = await upload(t, [{ name: 'file', filename: `${'n'.repeat(996)}.txt`, data: 'x' }])
    expect([...reply.body.files[0].filename].length).toBe(255)
  })

  test.each([
    [
      'public is not a boolean',
      [
        { name: 'file', filename: 'a', data: 'a' },
        { name: 'public', data: 'yes' },
      ],
      'public',
      'yes',
    ],
    [
      'an unknown text field',
      [
        { name: 'file', filename: 'a', data: 'a' },
        { name: 'owner', data: 'me' },
      ],
      'owner',
      'me',
    ],
    [
      'description over 1000 characters',
      [
        { name: 'file', filename: 'a', data: 'a' },
        { name: 'description', data: 'd'.repeat(1001) },
      ],
      'description',
      'd'.repeat(200),
    ],
    [
      'two file parts with one name',
      [
        { name: 'file', filename: 'a', data: 'a' },
        { name: 'file', filename: 'b', data: 'b' },
      ],
      'file',
      undefined,
    ],
    ['no file part', [{ name: 'description', data: 'only text' }], 'file', undefined],
  ] as [string, Part[], string, string | undefined][])(
    '%s: 422 naming it, nothing stored',
    async (_label, parts, field, received) => {
      await using t = await makeTestApp()
      const error = expectEnvelope(await upload(t, parts), 422, 'VALIDATION_ERROR')
      expect(error.details).toContainEqual(
        received === undefined
          ? expect.objectContaining({ field })
          : expect.objectContaining({ field, received }),
      )
      expect(await stored(t)).toEqual(NOTHING)
    },
  )

  test('multipart without a boundary is 422; other types are 415', async () => {
    await using t = await makeTestApp()
    const noBoundary = await t.call('POST', '/upload', {
      body: 'x',
      headers: { 'content-type': 'multipart/form-data' },
    })
    expectEnvelope(noBoundary, 422, 'VALIDATION_ERROR')
    for (const type of ['application/json', 'text/plain', 'image/png']) {
      expectEnvelope(
        await t.call('POST', '/upload', { body: '{}', headers: { 'content-type': type } }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      )
    }
    expect(await stored(t)).toEqual(NOTHING)
  })

  test('a truncated or malformed body is 400 and leaves nothing', async () => {
    await using t = await makeTestApp()
    const full = multipartBody([{ name: 'file', filename: 'a.bin', data: randomBytes(50_000) }])
    const truncated = await t.call('POST', '/upload', {
      body: full.subarray(0, 30_000),
      headers: { 'content-type': multipartType() },
    })
    expectEnvelope(truncated, 400, 'BAD_REQUEST')
    const garbage = await t.call('POST', '/upload', {
      body: 'not multipart at all',
      headers: { 'content-type': multipartType() },
    })
    expect([400, 422]).toContain(garbage.status)
    expect(await stored(t)).toEqual(NOTHING)
  })
})

describe('limits', () => {
  test('a file over --max-file-size is 413 and leaves nothing', async () => {
    await using t = await makeTestApp({ maxFileSize: 10_000 })
    const reply = await upload(t, [{ name: 'file', filename: 'big', data: randomBytes(10_001) }])
    expectEnvelope(reply, 413, 'PAYLOAD_TOO_LARGE')
    expect(
      (await upload(t, [{ name: 'file', filename: 'ok', data: randomBytes(10_000) }])).status,
    ).toBe(201)
    const rawReply = await raw(t, randomBytes(10_001))
    expectEnvelope(rawReply, 413, 'PAYLOAD_TOO_LARGE')
    expect(await stored(t)).toEqual({ files: 1, incoming: 0, uploadRows: 1, fileRows: 1 })
  })

  test('more files than --max-files is 413', async () => {
    await using t = await makeTestApp({ maxFiles: 2 })
    const parts = [1, 2, 3].map((i) => ({ name: `f${i}`, filename: `${i}`, data: 'x' }))
    expectEnvelope(await upload(t, parts), 413, 'PAYLOAD_TOO_LARGE')
    expect(await stored(t)).toEqual(NOTHING)
  })

  test('files over --max-upload-size together are 413, even when each is small enough', async () => {
    await using t = await makeTestApp({ maxUploadSize: 25_000 })
    const parts = [1, 2, 3].map((i) => ({
      name: `f${i}`,
      filename: `${i}`,
      data: randomBytes(10_000),
    }))
    expectEnvelope(await upload(t, parts), 413, 'PAYLOAD_TOO_LARGE')
    expect(await stored(t)).toEqual(NOTHING)
  })

  test('a declared Content-Length over the limit is refused before reading', async () => {
    await using t = await makeTestApp({ maxUploadSize: 1000 })
    const reply = await raw(t, 'x', '', { 'content-length': '999999999' })
    expectEnvelope(reply, 413, 'PAYLOAD_TOO_LARGE')
  })
})

describe('POST /upload (raw)', () => {
  test('the body is one file named by Content-Disposition, typed by its name, described by the query', async () => {
    await using t = await makeTestApp()
    const data = randomBytes(70_000)
    const reply = await raw(t, data, '?description=scan&public=false', {
      'content-disposition': "attachment; filename*=UTF-8''%E2%82%AC%20report.pdf",
    })
    expect(reply.status).toBe(201)
    expect(reply.body).toMatchObject({
      description: 'scan',
      public: false,
      files: [
        {
          field: 'file',
          filename: '€ report.pdf',
          content_type: 'application/pdf',
          size: 70_000,
          sha256: sha256(data),
        },
      ],
    })
  })

  test('?filename= names it when there is no Content-Disposition; without a name it is octet-stream', async () => {
    await using t = await makeTestApp()
    expect((await raw(t, 'x', '?filename=a.json')).body.files[0]).toMatchObject({
      filename: 'a.json',
      content_type: 'application/json',
    })
    expect((await raw(t, 'x')).body.files[0]).toMatchObject({
      filename: 'file',
      content_type: 'application/octet-stream',
    })
  })

  test('public=maybe in the query is 422 with the text received, and nothing is stored', async () => {
    await using t = await makeTestApp()
    const error = expectEnvelope(await raw(t, 'x', '?public=maybe'), 422, 'VALIDATION_ERROR')
    expect(error.details).toEqual([
      { field: 'public', message: 'must be true or false', received: 'maybe' },
    ])
    expect(await stored(t)).toEqual(NOTHING)
  })
})

describe('downloads', () => {
  async function oneFile(
    t: TestApp,
    data: Uint8Array<ArrayBuffer> | string,
    type = 'application/octet-stream',
    extra: Part[] = [{ name: 'public', data: 'true' }],
  ) {
    const reply = await upload(t, [
      { name: 'file', filename: 'f', contentType: type, data },
      ...extra,
    ])
    return reply.body.files[0] as { id: string; url: string; sha256: string; content_type: string }
  }

  test('ETag is the SHA-256; If-None-Match gives 304', async () => {
    await using t = await makeTestApp()
    const file = await oneFile(t, 'abc')
    const first = await t.get(file.url)
    expect(first.headers.get('etag')).toBe(`"${file.sha256}"`)
    expect(first.headers.get('x-content-type-options')).toBe('nosniff')
    expect(first.headers.get('accept-ranges')).toBe('bytes')
    expect(
      (await t.get(file.url, { headers: { 'if-none-match': `"${file.sha256}"` } })).status,
    ).toBe(304)
  })

  test('Range: 206 with Content-Range; 416 past the end; ignored when If-Range names another version', async () => {
    await using t = await makeTestApp()
    const data = randomBytes(1000)
    const file = await oneFile(t, data)
    const part = await t.app.handle(
      new Request(`http://localhost${file.url}`, { headers: { range: 'bytes=100-199' } }),
    )
    expect(part.status).toBe(206)
    expect(part.headers.get('content-range')).toBe('bytes 100-199/1000')
    expect(part.headers.get('content-length')).toBe('100')
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(data.subarray(100, 200))
    const suffix = await t.app.handle(
      new Request(`http://localhost${file.url}`, { headers: { range: 'bytes=-10' } }),
    )
    expect(new Uint8Array(await suffix.arrayBuffer())).toEqual(data.subarray(990))
    const past = await t.get(file.url, { headers: { range: 'bytes=1000-' } })
    expect(past.status).toBe(416)
    expect(past.headers.get('content-range')).toBe('bytes */1000')
    const stale = await t.get(file.url, { headers: { range: 'bytes=0-9', 'if-range': '"older"' } })
    expect(stale.status).toBe(200)
    expect(stale.headers.get('content-length')).toBe('1000')
  })

  test.each([
    'text/html',
    'application/xhtml+xml',
    'image/svg+xml',
    'application/xml',
    'text/xml',
    'text/javascript',
    'application/javascript',
    'text/css',
    'application/wasm',
    'application/zip',
  ])(
    '%s is served as application/octet-stream, an attachment, sandboxed; its metadata keeps the type',
    async (type) => {
      await using t = await makeTestApp()
      const file = await oneFile(t, '<script>alert(1)</script>', type)
      expect(file.content_type).toBe(type)
      const reply = await t.get(file.url)
      expect(reply.headers.get('content-type')).toBe('application/octet-stream')
      expect(reply.headers.get('content-disposition')).toStartWith('attachment;')
      expect(reply.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff')
    },
  )

  test('a private file is no-store; a public one fetched without a credential may be cached', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const privateFile = await upload(t, [{ name: 'file', filename: 'a.txt', data: 'x' }], {
      'x-api-key': key,
    })
    const url = privateFile.body.files[0].url as string
    expect((await t.get(url, { headers: { 'x-api-key': key } })).headers.get('cache-control')).toBe(
      'no-store',
    )
    const publicFile = await oneFile(t, 'y')
    expect((await t.get(publicFile.url)).headers.get('cache-control')).toBe('public, no-cache')
  })

  test('an image is inline', async () => {
    await using t = await makeTestApp()
    const file = await oneFile(t, 'png', 'image/png')
    expect((await t.get(file.url)).headers.get('content-disposition')).toStartWith('inline;')
  })

  test('HEAD gives the headers without the body', async () => {
    await using t = await makeTestApp()
    const file = await oneFile(t, 'hello')
    const head = await t.call('HEAD', file.url)
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe('5')
    expect(head.text).toBe('')
  })

  test('an unknown or malformed file id is 404', async () => {
    await using t = await makeTestApp()
    for (const id of [
      'fil_nope',
      'fil_AAAAAAAAAAAAAAAAAAAAAA',
      '../roster.db',
      'upl_AAAAAAAAAAAAAAAAAAAAAA',
    ]) {
      expectEnvelope(await t.get(`/files/${id}`), 404, 'NOT_FOUND')
    }
  })
})

describe('ownership and private uploads', () => {
  async function setup(isPublic: boolean) {
    const t = await makeTestApp()
    const owner = await signedIn(t, 'owner@example.com')
    const other = await signedIn(t, 'other@example.com')
    const key = await apiKey(t)
    const reply = await upload(
      t,
      [
        { name: 'file', filename: 'a.txt', data: 'secret' },
        { name: 'public', data: String(isPublic) },
      ],
      {
        authorization: `Bearer ${owner.token}`,
      },
    )
    expect(reply.status).toBe(201)
    return {
      t,
      id: reply.body.id as string,
      fileUrl: reply.body.files[0].url as string,
      asOwner: { authorization: `Bearer ${owner.token}` },
      asOther: { authorization: `Bearer ${other.token}` },
      asKey: { 'x-api-key': key },
    }
  }

  test('private: the owner and API keys see it; nobody else learns it exists', async () => {
    const { t, id, fileUrl, asOwner, asOther, asKey } = await setup(false)
    await using _ = t
    for (const path of [`/uploads/${id}`, fileUrl]) {
      expect((await t.get(path, { headers: asOwner })).status).toBe(200)
      expect((await t.get(path, { headers: asKey })).status).toBe(200)
      const anonymous = await t.get(path)
      expectEnvelope(anonymous, 401, 'UNAUTHORIZED')
      expect(anonymous.headers.get('www-authenticate')).toContain('Bearer')
      expectEnvelope(await t.get(path, { headers: asOther }), 404, 'NOT_FOUND')
    }
    expectEnvelope(await t.call('DELETE', `/uploads/${id}`, { headers: asOther }), 404, 'NOT_FOUND')
    expectEnvelope(await t.call('DELETE', `/uploads/${id}`), 401, 'UNAUTHORIZED')
    expect((await t.call('DELETE', `/uploads/${id}`, { headers: asOwner })).body).toEqual({
      id,
      deleted: true,
    })
    expect(await stored(t)).toEqual(NOTHING)
  })

  test('public: anyone reads it; another user may not delete it (403); an API key may', async () => {
    const { t, id, fileUrl, asOther, asKey } = await setup(true)
    await using _ = t
    expect((await t.get(fileUrl)).text).toBe('secret')
    expect((await t.get(`/uploads/${id}`)).status).toBe(200)
    expectEnvelope(await t.call('DELETE', `/uploads/${id}`, { headers: asOther }), 403, 'FORBIDDEN')
    expect((await t.call('DELETE', `/uploads/${id}`, { headers: asKey })).status).toBe(200)
    expectEnvelope(await t.get(fileUrl), 404, 'NOT_FOUND')
  })

  test('an anonymous upload in open mode is owned by nobody: only API keys may delete it', async () => {
    await using t = await makeTestApp()
    const reply = await upload(t, [
      { name: 'file', filename: 'a', data: 'x' },
      { name: 'public', data: 'true' },
    ])
    expectEnvelope(await t.call('DELETE', `/uploads/${reply.body.id}`), 401, 'UNAUTHORIZED')
    expect(
      (
        await t.call('DELETE', `/uploads/${reply.body.id}`, {
          headers: { 'x-api-key': await apiKey(t) },
        })
      ).status,
    ).toBe(200)
  })

  test('a bad credential sent with an upload is 401, not an anonymous upload', async () => {
    await using t = await makeTestApp()
    expectEnvelope(
      await upload(t, [{ name: 'file', filename: 'a', data: 'x' }], {
        authorization: 'Bearer rt_nope',
      }),
      401,
      'UNAUTHORIZED',
    )
    expect(await stored(t)).toEqual(NOTHING)
  })

  test('in protected mode an upload needs a credential', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    expectEnvelope(
      await upload(t, [{ name: 'file', filename: 'a', data: 'x' }]),
      401,
      'UNAUTHORIZED',
    )
    await t.post(
      '/users',
      { name: 'A', email: 'a@example.com', password: PASSWORD },
      { headers: { 'x-api-key': await apiKey(t) } },
    )
  })

  test('GET /data counts uploads', async () => {
    await using t = await makeTestApp()
    await upload(t, [{ name: 'file', filename: 'a', data: 'x' }])
    expect(
      (await t.get('/data', { headers: { 'x-api-key': await apiKey(t) } })).body.data.uploads,
    ).toBe(1)
  })

  test('CSRF: a cross-site form upload is refused', async () => {
    await using t = await makeTestApp()
    const reply = await upload(t, [{ name: 'file', filename: 'a', data: 'x' }], {
      origin: 'https://evil.test',
    })
    expectEnvelope(reply, 403, 'FORBIDDEN')
    expect(await stored(t)).toEqual(NOTHING)
  })
})

describe('GET /uploads (API key)', () => {
  const raw = (t: TestApp, name: string, headers: Record<string, string> = {}) =>
    t.call('POST', `/upload?filename=${name}`, {
      body: name,
      headers: { 'content-type': 'application/octet-stream', ...headers },
    })

  test('every upload with its files, newest first, in the list envelope with X-Total-Count and Link', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    const ids: string[] = []
    for (const name of ['a.txt', 'b.txt', 'c.txt']) ids.push((await raw(t, name)).body.id)
    // A private upload by a user is listed too: an API key may read every upload.
    const { token } = await signedIn(t)
    ids.push((await raw(t, 'd.txt', { authorization: `Bearer ${token}` })).body.id)
    const page = await t.get('/uploads?limit=2', { headers: { 'x-api-key': key } })
    expect(page.status).toBe(200)
    expect(page.body.pagination).toEqual({ limit: 2, offset: 0, total: 4 })
    expect(page.body.data.map((u: { id: string }) => u.id)).toEqual([ids[3], ids[2]])
    expect(page.body.data[0].files[0]).toMatchObject({ filename: 'd.txt', size: 5 })
    expect(page.body.data[0].files[0].url).toStartWith('/files/fil_')
    expect(page.headers.get('x-total-count')).toBe('4')
    const link = page.headers.get('link') ?? ''
    expect(link).toContain('/uploads?limit=2&offset=2>; rel="next"')
    expect(link).toContain('rel="last"')
    const second = await t.get('/v2/uploads?limit=2&offset=2', { headers: { 'x-api-key': key } })
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual([ids[1], ids[0]])
    expect(second.body.data[0].files[0].url).toStartWith('/v2/files/fil_')
  })

  test('needs uploads:read: 401 with ApiKey first, a member’s credential is 403; bad pages are 422', async () => {
    await using t = await makeTestApp()
    const none = await t.get('/uploads')
    expectEnvelope(none, 401, 'UNAUTHORIZED')
    expect(none.headers.get('www-authenticate')).toStartWith('ApiKey')
    const { token } = await signedIn(t)
    expectEnvelope(
      await t.get('/uploads', { headers: { authorization: `Bearer ${token}` } }),
      403,
      'FORBIDDEN',
    )
    const key = await apiKey(t)
    const bad = await t.get('/uploads?limit=0&offset=-1', { headers: { 'x-api-key': key } })
    expect(expectEnvelope(bad, 422, 'VALIDATION_ERROR').details.map((d) => d.field)).toEqual([
      'limit',
      'offset',
    ])
    const empty = await t.get('/uploads', { headers: { 'x-api-key': key } })
    expect(empty.body).toEqual({ data: [], pagination: { limit: 20, offset: 0, total: 0 } })
  })
})

describe('file parts without a name', () => {
  test('a file part with no name, or an empty one, is a 422 naming file; nothing is kept', async () => {
    await using t = await makeTestApp()
    const boundary = 'NoNameBoundary'
    for (const disposition of [
      'form-data; filename="a.txt"',
      'form-data; name=""; filename="a.txt"',
    ]) {
      const body = `--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`
      const reply = await t.call('POST', '/upload', {
        body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      })
      expect(expectEnvelope(reply, 422, 'VALIDATION_ERROR').details).toEqual([
        { field: 'file', message: 'every file part needs a name', received: '' },
      ])
    }
    expect(await t.deps.uploads.count()).toBe(0)
    expect((await storedFiles(t.deps)).pending).toEqual([])
  })
})
