// A client typed from `roster openapi` (openapi-typescript → roster-api.gen.ts, driven with
// openapi-fetch) runs the README's flows against the compiled binary. tsc checks this file
// against the generated types, and every answer is checked against the document at run time:
// a document that lies about a shape or a status breaks CI.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import createClient, { type Middleware } from 'openapi-fetch'
import { tempDir } from '../helpers/app'
import { type RunningBinary, requireBinary, startBinary } from '../helpers/binary'
import { DocumentChecker, type OpenApiDoc } from '../helpers/openapi'
import type { components, paths } from './roster-api.gen'

/** The document's named schemas are types a client imports. */
type User = components['schemas']['User']

setDefaultTimeout(30_000)

const dir = tempDir()
let server: RunningBinary
let client: ReturnType<typeof createClient<paths>>
const problems: string[] = []
const seen: number[] = []

beforeAll(async () => {
  requireBinary()
  server = await startBinary(['--data-dir', join(dir.path, 'data')])
  const doc = (await (await fetch(`${server.url}/swagger/json`)).json()) as OpenApiDoc
  const checker = new DocumentChecker(doc)
  // Every answer the client gets is checked against the document.
  const conformance: Middleware = {
    async onResponse({ request, response }) {
      const contentType = response.headers.get('content-type')
      const text = await response.clone().text()
      const body = contentType?.includes('json') && text !== '' ? JSON.parse(text) : text
      seen.push(response.status)
      const problem = checker.check(request.method, new URL(request.url).pathname, {
        status: response.status,
        contentType,
        body,
      })
      if (problem !== null) problems.push(problem)
    },
  }
  client = createClient<paths>({ baseUrl: server.url })
  client.use(conformance)
})

afterAll(async () => {
  await server?.stop()
  dir[Symbol.dispose]()
})

const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

describe('a client generated from the OpenAPI document, against the binary', () => {
  test('users: create (and retry with an Idempotency-Key), list and follow Link and next_cursor, 304, a stale If-Match 412, delete', async () => {
    const body = { name: 'Ada Lovelace', email: 'ada@example.com', password: 'correct horse' }
    const created = await client.POST('/users', {
      body,
      params: { header: { 'Idempotency-Key': 'create-ada' } },
    })
    expect(created.response.status).toBe(201)
    const ada: User | undefined = created.data
    if (ada === undefined) throw new Error('no body')
    expect(ada.email).toBe('ada@example.com')
    const retried = await client.POST('/users', {
      body,
      params: { header: { 'Idempotency-Key': 'create-ada' } },
    })
    expect(retried.response.headers.get('idempotent-replayed')).toBe('true')
    expect(retried.data?.id).toBe(ada.id)
    for (const n of [1, 2, 3]) {
      await client.POST('/users', { body: { name: `User ${n}`, email: `u${n}@example.com` } })
    }
    const first = await client.GET('/users', { params: { query: { limit: 2 } } })
    expect(first.data?.pagination).toEqual({ limit: 2, offset: 0, total: 4 })
    const next = /<([^>]+)>; rel="next"/.exec(first.response.headers.get('link') ?? '')?.[1]
    expect(next).toMatch(/[?&]offset=2(&|$)/)
    const second = await client.GET('/users', {
      params: {
        query: { limit: 2, offset: Number(new URL(next as string).searchParams.get('offset')) },
      },
    })
    expect(second.data?.data.map((user) => user.email)).toEqual([
      'u2@example.com',
      'u3@example.com',
    ])
    const v2 = await client.GET('/v2/users', { params: { query: { limit: 3, q: 'example' } } })
    const cursor = v2.data?.pagination.next_cursor
    expect(typeof cursor).toBe('string')
    const after = await client.GET('/v2/users', {
      params: { query: { limit: 3, q: 'example', cursor: cursor as string } },
    })
    expect(after.data?.data.map((user) => user.email)).toEqual(['u3@example.com'])

    const read = await client.GET('/users/{id}', { params: { path: { id: String(ada.id) } } })
    const etag = read.response.headers.get('etag') as string
    const notModified = await client.GET('/users/{id}', {
      params: { path: { id: String(ada.id) }, header: { 'If-None-Match': etag } },
    })
    expect(notModified.response.status).toBe(304)
    const patched = await client.PATCH('/users/{id}', {
      params: { path: { id: String(ada.id) }, header: { 'If-Match': etag } },
      body: { name: 'Ada King' },
    })
    expect(patched.data?.name).toBe('Ada King')
    const stale = await client.PATCH('/users/{id}', {
      params: { path: { id: String(ada.id) }, header: { 'If-Match': etag } },
      body: { name: 'Countess' },
    })
    expect(stale.response.status).toBe(412)
    expect(stale.error?.error.code).toBe('PRECONDITION_FAILED')
    const invalid = await client.POST('/users', { body: { name: '', email: 'not-an-email' } })
    expect(invalid.error?.error.details.map((detail) => [detail.field, detail.received])).toEqual([
      ['name', ''],
      ['email', 'not-an-email'],
    ])
    const removed = await client.DELETE('/users/{id}', { params: { path: { id: '4' } } })
    expect(removed.data).toEqual({ id: 4, deleted: true })
  })

  test('sign in, then /me with the token and with the cookie; an API key on /data both ways', async () => {
    const login = await client.POST('/login', {
      body: { email: 'ada@example.com', password: 'correct horse' },
      bodySerializer: (fields) => formBody(fields as Record<string, string>),
      headers: FORM,
    })
    // The document says /login answers a sign-in or, for an account with TOTP, mfa_required.
    const signedIn = login.data !== undefined && 'access_token' in login.data ? login.data : null
    expect(signedIn?.token_type).toBe('Bearer')
    const token = signedIn?.access_token as string
    const cookie = (login.response.headers.get('set-cookie') ?? '').split(';', 1)[0] as string
    const withToken = await client.GET('/me', { headers: { authorization: `Bearer ${token}` } })
    expect(withToken.data?.email).toBe('ada@example.com')
    const withCookie = await client.GET('/me', { headers: { cookie } })
    expect(withCookie.data?.name).toBe('Ada King')
    const wrong = await client.POST('/login', {
      body: { email: 'ada@example.com', password: 'wrong password' },
      bodySerializer: (fields) => formBody(fields as Record<string, string>),
      headers: FORM,
    })
    expect(wrong.error?.error.code).toBe('INVALID_CREDENTIALS')
    const missing = await client.POST('/login', { body: { email: 'ada@example.com' } })
    expect(missing.error?.error.details).toEqual([
      { field: 'password', message: 'is required (as password or pass)', received: '' },
    ])

    const key = (
      await Bun.$`${join(import.meta.dir, '../../dist/roster')} keys create --name typed --data-dir ${join(dir.path, 'data')}`.quiet()
    ).stdout
      .toString()
      .trim()
    const byHeader = await client.GET('/data', { headers: { 'x-api-key': key } })
    expect(byHeader.data?.key?.name).toBe('typed')
    const byQuery = await client.GET('/data', { params: { query: { api_key: key } } as never })
    expect(byQuery.data?.data.users).toBe(3)
  })

  test('an upload and its download with a Range, then delete', async () => {
    const form = new FormData()
    form.append('file', new File(['hello, typed world'], 'hello.txt', { type: 'text/plain' }))
    form.append('public', 'true')
    const uploaded = await client.POST('/upload', {
      body: {} as never,
      bodySerializer: () => form,
    })
    expect(uploaded.response.status).toBe(201)
    const file = uploaded.data?.files[0]
    if (file === undefined) throw new Error('no file')
    expect(file.size).toBe(18)
    const part = await client.GET('/files/{id}', {
      params: { path: { id: file.id } },
      headers: { range: 'bytes=0-4' },
      parseAs: 'text',
    })
    expect(part.response.status).toBe(206)
    expect(part.data).toBe('hello')
    const key = (
      await Bun.$`${join(import.meta.dir, '../../dist/roster')} keys create --name deleter --data-dir ${join(dir.path, 'data')}`.quiet()
    ).stdout
      .toString()
      .trim()
    const gone = await client.DELETE('/uploads/{id}', {
      params: { path: { id: uploaded.data?.id as string } },
      headers: { 'x-api-key': key },
    })
    expect(gone.data).toEqual({ id: uploaded.data?.id as string, deleted: true })
  })

  test('every answer matched the document for its route and status', () => {
    expect(seen.length).toBeGreaterThan(20)
    expect(problems).toEqual([])
  })

  test('the generated types are those of the current document', () => {
    const check = Bun.spawnSync([
      'bun',
      join(import.meta.dir, '../../scripts/client-types.ts'),
      '--check',
    ])
    // (npm may warn on stderr while it installs the generator the first time.)
    const said = check.stderr.toString()
    expect({ exit: check.exitCode, stale: said.includes('stale') }).toEqual({
      exit: 0,
      stale: false,
    })
  })
})
