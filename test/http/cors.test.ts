import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../helpers/app'

const preflight = (origin: string, method = 'POST') => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': 'content-type',
})

describe('CORS, default (*)', () => {
  test('a preflight gets 204, any origin, the route methods, never credentials', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('OPTIONS', '/users', { headers: preflight('https://evil.test') })
    expect(reply.status).toBe(204)
    expect(reply.headers.get('access-control-allow-origin')).toBe('*')
    expect(reply.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, OPTIONS')
    expect(reply.headers.get('access-control-allow-headers')).toContain('content-type')
    expect(reply.headers.get('access-control-max-age')).toBe('600')
    expect(reply.headers.get('access-control-allow-credentials')).toBeNull()
    expect(reply.headers.get('vary')).toBeNull()
  })

  test('OPTIONS without preflight headers is 204 with Allow', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('OPTIONS', '/users/1')
    expect(reply.status).toBe(204)
    expect(reply.headers.get('allow')).toBe('GET, HEAD, PUT, PATCH, DELETE, OPTIONS')
    expect(reply.headers.get('access-control-allow-methods')).toBeNull()
    expect(reply.text).toBe('')
  })

  test('OPTIONS on an unknown path is 404', async () => {
    await using t = await makeTestApp()
    expectEnvelope(await t.call('OPTIONS', '/nowhere'), 404, 'NOT_FOUND')
  })

  test('simple answers allow any origin and expose the useful headers', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/users', { headers: { origin: 'https://site.test' } })
    expect(reply.headers.get('access-control-allow-origin')).toBe('*')
    expect(reply.headers.get('access-control-expose-headers')).toContain('x-total-count')
    expect(reply.headers.get('access-control-allow-credentials')).toBeNull()
    expect(reply.headers.get('access-control-allow-methods')).toBeNull()
  })
})

describe('CORS with --cors-origins', () => {
  const origins = ['https://app.example.com', 'http://localhost:5173']

  test('a listed origin is reflected with credentials and Vary: Origin', async () => {
    await using t = await makeTestApp({ corsOrigins: origins })
    for (const origin of origins) {
      const reply = await t.call('OPTIONS', '/users', { headers: preflight(origin) })
      expect(reply.status).toBe(204)
      expect(reply.headers.get('access-control-allow-origin')).toBe(origin)
      expect(reply.headers.get('access-control-allow-credentials')).toBe('true')
      expect(reply.headers.get('vary')).toBe('Origin')
      const simple = await t.get('/users', { headers: { origin } })
      expect(simple.headers.get('access-control-allow-origin')).toBe(origin)
      expect(simple.headers.get('access-control-allow-credentials')).toBe('true')
    }
  })

  test('an unlisted origin gets no Access-Control-Allow-Origin at all', async () => {
    await using t = await makeTestApp({ corsOrigins: origins })
    for (const origin of [
      'https://evil.test',
      'https://app.example.com.evil.test',
      'http://app.example.com',
      'null',
    ]) {
      const reply = await t.call('OPTIONS', '/users', { headers: preflight(origin) })
      expect(reply.headers.get('access-control-allow-origin')).toBeNull()
      expect(reply.headers.get('access-control-allow-credentials')).toBeNull()
      const simple = await t.get('/users', { headers: { origin } })
      expect(simple.headers.get('access-control-allow-origin')).toBeNull()
      expect(simple.headers.get('vary')).toBe('Origin')
    }
  })
})
