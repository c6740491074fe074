import { describe, expect, test } from 'bun:test'
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from '../../src/console/assets.gen'
import { CONSOLE_CSP } from '../../src/routes/console'
import { expectEnvelope, makeTestApp } from '../helpers/app'

function expectSecurityHeaders(headers: Headers) {
  expect(headers.get('content-security-policy')).toBe(CONSOLE_CSP)
  expect(headers.get('x-content-type-options')).toBe('nosniff')
  expect(headers.get('x-frame-options')).toBe('DENY')
  expect(headers.get('referrer-policy')).toBe('no-referrer')
  expect(headers.get('cross-origin-opener-policy')).toBe('same-origin')
}

describe('GET /console', () => {
  test('the page: strict CSP, no inline script or style, the hashed assets, never cached', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/console')
    expect(reply.status).toBe(200)
    expect(reply.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(reply.headers.get('cache-control')).toBe('no-store')
    expectSecurityHeaders(reply.headers)
    const csp = CONSOLE_CSP
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive)
    }
    expect(csp).not.toContain('unsafe')
    const html = reply.text
    expect(html).toContain(`<script type="module" src="/console/assets/${CONSOLE_SCRIPT.name}">`)
    expect(html).toContain(`href="/console/assets/${CONSOLE_STYLE.name}"`)
    // Every script has a src, nothing carries a style attribute or an inline handler.
    expect(html.match(/<script(?![^>]*\bsrc=)[^>]*>/g)).toBeNull()
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=|<style/i)
    // Unversioned only: the console is not part of the versioned API.
    expect((await t.get('/v1/console')).status).toBe(404)
  })

  test('assets: exact bytes, the right types, cached for good; an unknown name is a 404 envelope', async () => {
    await using t = await makeTestApp()
    for (const asset of [CONSOLE_SCRIPT, CONSOLE_STYLE]) {
      const reply = await t.get(`/console/assets/${asset.name}`)
      expect(reply.status).toBe(200)
      expect(reply.headers.get('content-type')).toBe(asset.type)
      expect(reply.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expectSecurityHeaders(reply.headers)
      expect(reply.text).toBe(asset.body)
    }
    const icon = await t.get('/console/assets/icon.svg')
    expect(icon.headers.get('content-type')).toBe('image/svg+xml')
    for (const name of ['nope.js', '..%2F..%2Froster.db', 'console.js', '%00']) {
      expectEnvelope(await t.get(`/console/assets/${name}`), 404, 'NOT_FOUND')
    }
    const post = await t.call('POST', '/console')
    expectEnvelope(post, 405, 'METHOD_NOT_ALLOWED')
  })

  test('not in the OpenAPI document (it is a page, not API)', async () => {
    await using t = await makeTestApp()
    const document = (await t.get('/swagger/json')).body as { paths: Record<string, unknown> }
    expect(Object.keys(document.paths).filter((path) => path.includes('console'))).toEqual([])
  })
})
