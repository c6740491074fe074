import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { makeTestApp } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { isScimError } from '../helpers/openapi'

// A JSON body nested 150,000 levels deep (750 KB, under the 1 MiB limit) parses, but anything
// that walks it recursively overflows the stack: Elysia's validation message did (a 500) for
// a body schema without an `error` of its own.

describe('a deeply nested JSON body', () => {
  test('is refused with the envelope (or ignored) by every route that takes a body, never a 500', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    await t.deps.users.create({ name: 'Ada', email: 'ada@example.com', passwordHash: null }, SYSTEM)
    let body = '1'
    for (let i = 0; i < 150_000; i++) body = `{"a":${body}}`
    const writes = t.app.routes.filter((route) => ['POST', 'PUT', 'PATCH'].includes(route.method))
    expect(writes.length).toBeGreaterThan(30)
    const answers: string[] = []
    for (const route of writes) {
      const path = route.path.replace(/:[A-Za-z]+/g, '1')
      const reply = await t.call(route.method, path, {
        body,
        headers: { 'content-type': 'application/json', 'x-api-key': key },
      })
      // A route that takes no body (an invitation) may ignore it; a refusal has the envelope
      // (SCIM's error form under /scim/v2).
      const refusal = reply.body?.error !== undefined || isScimError(path, reply.body)
      if (reply.status >= 500 || (reply.status >= 400 && !refusal)) {
        answers.push(`${route.method} ${route.path}: ${reply.status}`)
      }
    }
    expect(answers).toEqual([])
    // Each route reads 750 KB and parses it: over 100 routes take longer than the default.
  }, 120_000)
})
