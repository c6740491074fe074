import { describe, expect, test } from 'bun:test'
import Ajv from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { makeTestApp, type Reply, type TestApp, uploadDirOf } from '../../helpers/app'

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >
  components?: Record<string, unknown>
}

describe('/swagger', () => {
  test('the UI page loads its script and style from the binary, not a CDN', async () => {
    await using t = await makeTestApp()
    const page = await t.get('/swagger')
    expect(page.status).toBe(200)
    expect(page.text).not.toMatch(/https?:\/\//)
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)
    expect(sources.sort()).toEqual([
      '/swagger/assets/init.js',
      '/swagger/assets/swagger-ui-bundle.js',
      '/swagger/assets/swagger-ui.css',
    ])
    // No inline script: the page starts Swagger UI from a file of its own.
    expect(page.text).not.toMatch(/<script>/)
    for (const source of sources) {
      const asset = await t.get(source)
      expect(asset.status).toBe(200)
      expect(asset.text.length).toBeGreaterThan(source.endsWith('init.js') ? 50 : 100_000)
    }
  })

  test('/openapi.json is the same document, naming this server: --public-url, else the request’s origin', async () => {
    await using t = await makeTestApp()
    const served = await t.app.handle(new Request('http://127.0.0.1:9123/openapi.json'))
    expect(served.status).toBe(200)
    const doc = (await served.json()) as {
      servers: { url: string; description?: string }[]
      paths: object
    }
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:9123', description: 'this roster' }])
    expect(Object.keys(doc.paths)).toEqual(Object.keys((await t.get('/swagger/json')).body.paths))
    await using behind = await makeTestApp({ publicUrl: 'https://api.example.com/roster' })
    const named = await behind.app.handle(new Request('http://127.0.0.1:9123/openapi.json'))
    expect(((await named.json()) as { servers: { url: string }[] }).servers[0]?.url).toBe(
      'https://api.example.com/roster',
    )
  })

  test('/swagger/json is an OpenAPI 3 document with the v1 and v2 routes', async () => {
    await using t = await makeTestApp()
    const doc = (await t.get('/swagger/json')).body
    expect(doc.openapi).toStartWith('3.')
    const unversioned = [
      '/health',
      '/health/live',
      '/health/ready',
      '/users',
      '/users/export',
      '/users/{id}',
      '/groups',
      '/groups/{id}',
      '/groups/{id}/members/{userId}',
      '/login',
      '/logout',
      '/me',
      '/secure',
      '/data',
      '/api-keys',
      '/api-keys/{id}',
      '/upload',
      '/uploads',
      '/uploads/{id}',
      '/files/{id}',
      '/webhooks',
      '/webhook',
      '/webhooks/events',
      '/webhooks/events/{id}/retry',
      '/auth/verify-email/request',
      '/auth/verify-email/confirm',
      '/auth/password-reset/request',
      '/auth/password-reset/confirm',
      '/auth/magic-link/request',
      '/auth/magic-link/confirm',
      '/auth/email-change/request',
      '/auth/email-change/confirm',
      '/auth/email-change-undo/confirm',
      '/auth/invitation/confirm',
      '/users/{id}/invite',
      '/users/{id}/provisioning',
      '/auth/passkeys/register/options',
      '/auth/passkeys/register/verify',
      '/auth/passkeys/login/options',
      '/auth/passkeys/login/verify',
      '/me/passkeys',
      '/me/passkeys/{id}',
      '/me/factors',
      '/auth/totp/enroll',
      '/auth/totp/confirm',
      '/auth/totp',
      '/auth/recovery-codes',
      '/auth/mfa/verify',
      '/users/{id}/factors',
      '/mail',
      '/mail/{id}',
      '/mail/{id}/resend',
      '/audit',
      '/audit/{id}',
      '/events',
      '/webhook-endpoints',
      '/webhook-endpoints/{id}',
      '/webhook-endpoints/{id}/rotate-secret',
      '/webhook-endpoints/{id}/deliveries',
      '/webhook-endpoints/{id}/deliveries/{deliveryId}',
      '/webhook-endpoints/{id}/deliveries/{deliveryId}/retry',
    ]
    // The pages links in mail open are documents, served once.
    const pages = [
      '/auth/verify-email',
      '/auth/password-reset',
      '/auth/magic-link',
      '/auth/email-change',
      '/auth/email-change-undo',
      '/auth/invitation',
    ]
    // SCIM has its own version in its path.
    const scim = [
      '/ServiceProviderConfig',
      '/ResourceTypes',
      '/ResourceTypes/{id}',
      '/Schemas',
      '/Schemas/{id}',
      '/Users',
      '/Users/.search',
      '/Users/{id}',
      '/Groups',
      '/Groups/.search',
      '/Groups/{id}',
    ].map((path) => `/scim/v2${path}`)
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/metrics',
        ...pages,
        ...scim,
        ...unversioned,
        ...unversioned.map((path) => `/v2${path}`),
      ].sort(),
    )
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      'apiKeyHeader',
      'apiKeyQuery',
      'basic',
      'bearer',
      'bearerApiKey',
      'session',
    ])
    expect(doc.paths['/me'].get.security).toEqual([{ bearer: [] }, { session: [] }])
    expect(doc.paths['/login'].post.requestBody.content).toHaveProperty(
      'application/x-www-form-urlencoded',
    )
    expect(doc.paths['/v2/users'].get.parameters.map((p: { name: string }) => p.name)).toContain(
      'cursor',
    )
  })
})

/** Validates a real answer against the schema the document gives for its status. */
async function conforms(t: TestApp, doc: OpenApiDoc, path: string, method: string, reply: Reply) {
  const responses = doc.paths[path]?.[method]?.responses
  const schema = responses?.[String(reply.status)]?.content?.['application/json']?.schema
  expect({ path, method, status: reply.status, documented: schema !== undefined }).toEqual({
    path,
    method,
    status: reply.status,
    documented: true,
  })
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addFormat('user-name', true)
  // The document's own components, so that `$ref: #/components/schemas/User` resolves.
  const validate = ajv.compile({ ...(schema as object), components: doc.components })
  const ok = validate(reply.body)
  expect({ path, method, status: reply.status, errors: ok ? null : validate.errors }).toEqual({
    path,
    method,
    status: reply.status,
    errors: null,
  })
  void t
}

describe('the OpenAPI document matches the real answers', () => {
  test('for every users route, success and error answers', async () => {
    await using t = await makeTestApp()
    const doc = (await t.get('/swagger/json')).body as OpenApiDoc
    const user = { name: 'Ada', email: 'ada@example.com' }
    for (const prefix of ['', '/v2']) {
      const created = await t.post(`${prefix}/users`, {
        ...user,
        email: `${prefix.length}${user.email}`,
      })
      const id = created.body.id
      const checks: [string, string, Reply][] = [
        ['/users', 'post', created],
        ['/users', 'post', await t.post(`${prefix}/users`, { name: 1 })],
        [
          '/users',
          'post',
          await t.post(`${prefix}/users`, { ...user, email: `${prefix.length}${user.email}` }),
        ],
        ['/users', 'get', await t.get(`${prefix}/users`)],
        ['/users', 'get', await t.get(`${prefix}/users?limit=0`)],
        ['/users/{id}', 'get', await t.get(`${prefix}/users/${id}`)],
        ['/users/{id}', 'get', await t.get(`${prefix}/users/999`)],
        [
          '/users/{id}',
          'put',
          await t.call('PUT', `${prefix}/users/${id}`, {
            json: { ...user, email: `${prefix.length}${user.email}` },
          }),
        ],
        [
          '/users/{id}',
          'patch',
          await t.call('PATCH', `${prefix}/users/${id}`, { json: { name: 'B' } }),
        ],
        [
          '/users/{id}',
          'patch',
          await t.call('PATCH', `${prefix}/users/${id}`, {
            json: { name: 'B' },
            headers: { 'if-match': '"x"' },
          }),
        ],
        ['/users/{id}', 'delete', await t.call('DELETE', `${prefix}/users/${id}`)],
        ['/health', 'get', await t.get(`${prefix}/health`)],
      ]
      for (const [path, method, reply] of checks)
        await conforms(t, doc, prefix + path, method, reply)
    }
  })

  test('for the credential routes', async () => {
    await using t = await makeTestApp()
    const doc = (await t.get('/swagger/json')).body as OpenApiDoc
    const { apiKey, basic, form, PASSWORD } = await import('../../helpers/auth')
    await t.post('/users', { name: 'Ada', email: 'ada@example.com', password: PASSWORD })
    const key = { 'x-api-key': await apiKey(t) }
    const login = await t.call(
      'POST',
      '/login',
      form({ email: 'ada@example.com', password: PASSWORD }),
    )
    const bearer = { authorization: `Bearer ${login.body.access_token}` }
    const checks: [string, string, Reply][] = [
      ['/login', 'post', login],
      [
        '/login',
        'post',
        await t.call('POST', '/login', form({ email: 'ada@example.com', password: 'wrong' })),
      ],
      ['/login', 'post', await t.call('POST', '/login', form({}))],
      ['/me', 'get', await t.get('/me', { headers: bearer })],
      ['/me', 'get', await t.get('/me')],
      [
        '/secure',
        'get',
        await t.get('/secure', { headers: { authorization: basic('ada@example.com', PASSWORD) } }),
      ],
      ['/secure', 'get', await t.get('/secure')],
      ['/data', 'get', await t.get('/data', { headers: key })],
      ['/api-keys', 'post', await t.post('/api-keys', { name: 'n' }, { headers: key })],
      ['/api-keys', 'get', await t.get('/api-keys', { headers: key })],
      ['/api-keys/{id}', 'delete', await t.call('DELETE', '/api-keys/2', { headers: key })],
      ['/api-keys/{id}', 'delete', await t.call('DELETE', '/api-keys/2', { headers: key })],
      ['/logout', 'post', await t.call('POST', '/logout')],
    ]
    for (const [path, method, reply] of checks) await conforms(t, doc, path, method, reply)
  })

  test('for the upload routes', async () => {
    await using t = await makeTestApp()
    const doc = (await t.get('/swagger/json')).body as OpenApiDoc
    const { multipartBody, multipartType } = await import('../../helpers/multipart')
    const send = (parts: { name: string; filename?: string; data: string }[]) =>
      t.call('POST', '/upload', {
        body: multipartBody(parts),
        headers: { 'content-type': multipartType() },
      })
    const created = await send([{ name: 'file', filename: 'a.txt', data: 'a' }])
    const checks: [string, string, Reply][] = [
      ['/upload', 'post', created],
      ['/upload', 'post', await send([{ name: 'description', data: 'no file' }])],
      [
        '/upload',
        'post',
        await t.call('POST', '/upload', { body: 'x', headers: { 'content-type': 'text/plain' } }),
      ],
      ['/uploads/{id}', 'get', await t.get(`/uploads/${created.body.id}`)],
      ['/uploads/{id}', 'get', await t.get('/uploads/upl_AAAAAAAAAAAAAAAAAAAAAA')],
      ['/uploads/{id}', 'delete', await t.call('DELETE', `/uploads/${created.body.id}`)],
    ]
    for (const [path, method, reply] of checks) await conforms(t, doc, path, method, reply)
  })

  test('for the webhook routes', async () => {
    const { event, STRIPE_SECRET, stripeHeaders } = await import('../../helpers/webhooks')
    const { apiKey } = await import('../../helpers/auth')
    await using t = await makeTestApp({ webhookSecrets: [STRIPE_SECRET] })
    const doc = (await t.get('/swagger/json')).body as OpenApiDoc
    const deliver = async (body: string, signed = true) =>
      t.call('POST', '/webhooks', {
        body,
        headers: {
          'content-type': 'application/json',
          ...(signed ? await stripeHeaders(body) : {}),
        },
      })
    const checks: [string, string, Reply][] = [
      ['/webhooks', 'post', await deliver(event('user.created', { email: 'w@example.com' }))],
      ['/webhooks', 'post', await deliver(event('user.created', {}), false)],
      ['/webhooks', 'post', await deliver('not json')],
      ['/webhooks', 'post', await deliver(JSON.stringify({ id: 1 }))],
      [
        '/webhooks/events',
        'get',
        await t.get('/webhooks/events', { headers: { 'x-api-key': await apiKey(t) } }),
      ],
      ['/webhooks/events', 'get', await t.get('/webhooks/events')],
    ]
    expect(checks.map(([, , reply]) => reply.status)).toEqual([200, 400, 400, 422, 200, 401])
    for (const [path, method, reply] of checks) await conforms(t, doc, path, method, reply)
  })

  test('for /health when it fails (503)', async () => {
    await using t = await makeTestApp({ storage: null })
    const doc = (await t.get('/swagger/json')).body as OpenApiDoc
    const { rmSync } = await import('node:fs')
    rmSync(uploadDirOf(t.deps), { recursive: true })
    const reply = await t.get('/health')
    expect(reply.status).toBe(503)
    await conforms(t, doc, '/health', 'get', reply)
  })
})

describe('the documentation pages carry the console’s protective headers', () => {
  test.each(['/swagger', '/docs/errors'])(
    '%s: CSP, frame-ancestors none, nosniff, no referrer',
    async (path) => {
      await using t = await makeTestApp()
      const reply = await t.get(path)
      expect(reply.status).toBe(200)
      const csp = reply.headers.get('content-security-policy') ?? ''
      for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) {
        expect(csp).toContain(directive)
      }
      expect(csp).not.toContain('unsafe-inline')
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff')
      expect(reply.headers.get('referrer-policy')).toBe('no-referrer')
      expect(reply.headers.get('x-frame-options')).toBe('DENY')
    },
  )

  test('/docs/errors allows exactly its own inline stylesheet, by hash', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/docs/errors')
    const style = /<style>([\s\S]*?)<\/style>/.exec(reply.text)?.[1] ?? ''
    const hash = new Bun.CryptoHasher('sha256').update(style).digest('base64')
    expect(reply.headers.get('content-security-policy')).toContain(`style-src 'sha256-${hash}'`)
  })
})

describe('the numbers the document states are the numbers the service keeps', () => {
  test('every list answers a page at its documented largest limit, and 422 one above it', async () => {
    await using t = await makeTestApp()
    const { apiKey } = await import('../../helpers/auth')
    const headers = { 'x-api-key': await apiKey(t) }
    const doc = (await t.get('/swagger/json')).body as {
      paths: Record<
        string,
        {
          get?: { parameters?: { name: string; schema: { maximum?: number; default?: number } }[] }
        }
      >
    }
    const lists = Object.entries(doc.paths).flatMap(([path, item]) => {
      const limit = item.get?.parameters?.find((parameter) => parameter.name === 'limit')
      return limit === undefined ? [] : [{ path, ...limit.schema }]
    })
    expect(lists.map((list) => list.path).sort()).toEqual([
      '/api-keys',
      '/audit',
      '/groups',
      '/mail',
      '/uploads',
      '/users',
      '/v2/api-keys',
      '/v2/audit',
      '/v2/groups',
      '/v2/mail',
      '/v2/uploads',
      '/v2/users',
      '/v2/webhook-endpoints',
      '/v2/webhooks/events',
      '/webhook-endpoints',
      '/webhooks/events',
    ])
    for (const { path, maximum, default: fallback } of lists) {
      const largest = await t.get(`${path}?limit=${maximum}`, { headers })
      expect({ path, status: largest.status }).toEqual({ path, status: 200 })
      expect(largest.body.pagination.limit).toBe(maximum)
      const unasked = await t.get(path, { headers })
      expect({ path, limit: unasked.body.pagination.limit }).toEqual({ path, limit: fallback })
      const over = await t.get(`${path}?limit=${(maximum as number) + 1}`, { headers })
      expect({ path, status: over.status, field: over.body.error.details[0]?.field }).toEqual({
        path,
        status: 422,
        field: 'limit',
      })
    }
  })
})

describe('the OpenAPI document gives generated clients what they need', () => {
  // biome-ignore lint/suspicious/noExplicitAny: a parsed document, walked freely
  const documentOf = async (t: TestApp): Promise<any> => (await t.get('/openapi.json')).body

  test('named schemas: User, UserPage, Error, Upload … in components, and the operations refer to them', async () => {
    await using t = await makeTestApp()
    const doc = await documentOf(t)
    const schemas = Object.keys(doc.components.schemas)
    for (const name of [
      'User',
      'UserPage',
      'UserCursorPage',
      'Error',
      'Upload',
      'Group',
      'ApiKey',
    ]) {
      expect(schemas).toContain(name)
    }
    const json = (response: { content: Record<string, { schema: object }> }) =>
      response.content['application/json']?.schema
    expect(json(doc.paths['/users/{id}'].get.responses['200'])).toEqual({
      $ref: '#/components/schemas/User',
    })
    expect(json(doc.paths['/users'].get.responses['200'])).toEqual({
      $ref: '#/components/schemas/UserPage',
    })
    expect(json(doc.paths['/v2/users'].get.responses['200'])).toEqual({
      $ref: '#/components/schemas/UserCursorPage',
    })
    expect(doc.paths['/users'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/UserCreate',
    })
    expect(doc.components.schemas.UserPage.properties.data.items).toEqual({
      $ref: '#/components/schemas/User',
    })
    // Every error answer outside SCIM is the one envelope, named once.
    for (const [path, item] of Object.entries(doc.paths)) {
      // SCIM's errors have SCIM's form; /health's 503 is its report, naming the failing check.
      if (path.startsWith('/scim/v2') || path.includes('/health')) continue
      for (const [method, operation] of Object.entries(
        item as Record<string, { responses: object }>,
      )) {
        if (method === 'head') continue // a HEAD answer has no body
        for (const [status, response] of Object.entries(operation.responses)) {
          // 416 has no body (RFC 9110: Content-Range says why).
          if (Number(status) < 400 || status === '416') continue
          expect({ path, status, schema: json(response) }).toMatchObject({
            path,
            status,
            schema: { $ref: '#/components/schemas/Error' },
          })
        }
      }
    }
  })

  test('every $ref resolves, and no shape is spelled out twice where a name exists', async () => {
    await using t = await makeTestApp()
    const doc = await documentOf(t)
    const text = JSON.stringify(doc)
    for (const [, kind, name] of text.matchAll(/"#\/components\/(schemas|headers)\/([^"]+)"/g)) {
      expect({
        ref: `${kind}/${name}`,
        found: doc.components[kind as string][name as string] !== undefined,
      }).toEqual({
        ref: `${kind}/${name}`,
        found: true,
      })
    }
    // The error envelope is described in components only, not again in each response (the
    // health report aside, which holds its own).
    const paths = Object.entries(doc.paths).filter(([path]) => !path.includes('/health'))
    expect(JSON.stringify(paths)).not.toContain('The rejected input as text')
    expect(JSON.stringify(doc.components.schemas.Error)).toContain('The rejected input as text')
  })

  test('id, created_at and updated_at are readOnly in what the server answers', async () => {
    await using t = await makeTestApp()
    const { schemas } = (await documentOf(t)).components
    for (const name of ['User', 'Group', 'Upload', 'ApiKey', 'WebhookEndpoint']) {
      const properties = schemas[name].properties
      for (const field of ['id', 'created_at', 'updated_at']) {
        if (properties[field] !== undefined) expect(properties[field].readOnly).toBe(true)
      }
    }
    expect(schemas.User.properties.id.readOnly).toBe(true)
    expect(schemas.UserCreate.properties.name.readOnly).toBeUndefined()
  })

  test('response headers are documented, and the real answers carry them', async () => {
    await using t = await makeTestApp()
    const doc = await documentOf(t)
    const headersOf = (path: string, method: string, status: string) =>
      Object.keys(doc.paths[path][method].responses[status].headers ?? {})
    expect(headersOf('/users', 'post', '201')).toContain('Location')
    expect(headersOf('/users/{id}', 'get', '200')).toContain('ETag')
    expect(headersOf('/users/{id}', 'patch', '200')).toContain('ETag')
    expect(headersOf('/users', 'get', '200')).toEqual(
      expect.arrayContaining(['Link', 'X-Total-Count']),
    )
    expect(headersOf('/users', 'get', '429')).toEqual(
      expect.arrayContaining(['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining']),
    )
    expect(headersOf('/health', 'get', '200')).not.toContain('RateLimit-Limit')
    const created = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    expect(created.headers.get('location')).toBe(`/users/${created.body.id}`)
    expect((await t.get(`/users/${created.body.id}`)).headers.get('etag')).toBe(
      `"${created.body.id}.1"`,
    )
    const page = await t.get('/users')
    expect(page.headers.get('x-total-count')).toBe('1')
    expect(page.headers.get('link')).toContain('rel="first"')
  })

  test('HEAD beside every GET (SCIM aside) and OPTIONS on every path, answered as documented', async () => {
    await using t = await makeTestApp()
    const doc = await documentOf(t)
    const created = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    for (const [path, item] of Object.entries(doc.paths) as [string, Record<string, unknown>][]) {
      const methods = Object.keys(item)
      expect({ path, options: methods.includes('options') }).toEqual({ path, options: true })
      if (methods.includes('get') && !path.startsWith('/scim/v2')) {
        expect({ path, head: methods.includes('head') }).toEqual({ path, head: true })
      }
      const concrete = path.replace(/\{[^}]+\}/g, String(created.body.id))
      const answer = await t.call('OPTIONS', concrete)
      expect({ path, status: answer.status }).toEqual({ path, status: 204 })
      // Allow names exactly the methods the document gives the path.
      const allowed = (answer.headers.get('allow') ?? '').split(/,\s*/).sort()
      expect({ path, allowed }).toEqual({
        path,
        allowed: methods.map((method) => method.toUpperCase()).sort(),
      })
    }
    for (const path of ['/users', `/users/${created.body.id}`, '/v2/users', '/health']) {
      const [get, head] = [await t.get(path), await t.call('HEAD', path)]
      expect({ path, status: head.status, body: head.text }).toEqual({
        path,
        status: get.status,
        body: '',
      })
    }
  })

  test('a license and a contact', async () => {
    await using t = await makeTestApp()
    const { info } = await documentOf(t)
    expect(info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
    expect(typeof info.contact.name).toBe('string')
  })
})
