// CONTRACT section 17: objects built from request data never reach Object.prototype. Every
// route of the app, with every method it has, is sent the keys that lead into a prototype, in
// the query and (at every depth) in a JSON body, with an all-scopes key so the request gets past
// authentication; afterwards no built-in prototype has changed and a protected route still
// refuses a caller without credentials.

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { makeTestApp, readReply } from '../helpers/app'

const BUILT_INS: [string, object][] = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['Function.prototype', Function.prototype],
  ['String.prototype', String.prototype],
  ['Number.prototype', Number.prototype],
  ['Boolean.prototype', Boolean.prototype],
  ['RegExp.prototype', RegExp.prototype],
  ['Date.prototype', Date.prototype],
  ['Error.prototype', Error.prototype],
  ['Promise.prototype', Promise.prototype],
  ['Map.prototype', Map.prototype],
  ['Set.prototype', Set.prototype],
  ['Object', Object],
]

/** Each built-in's own keys with the value or accessor each holds, to compare by identity. */
function snapshot(): Map<string, unknown> {
  const seen = new Map<string, unknown>()
  for (const [name, target] of BUILT_INS) {
    for (const key of Reflect.ownKeys(target)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(target, key)
      seen.set(`${name}.${String(key)}`, descriptor?.get ?? descriptor?.set ?? descriptor?.value)
    }
  }
  return seen
}

function changes(before: Map<string, unknown>, after: Map<string, unknown>): string[] {
  const names = new Set([...before.keys(), ...after.keys()])
  return [...names].filter((name) => before.get(name) !== after.get(name))
}

const QUERIES = [
  '__proto__[optional]=1',
  '__proto__.optional=1',
  'constructor[prototype][optional]=1',
  'constructor.prototype.optional=1',
  'filter[__proto__]=x',
  'sort=x&prototype=1',
  '%5F%5Fproto%5F%5F=1',
  '__PROTO__=1',
]

const BODIES = [
  '{"__proto__":{"optional":true,"role":"admin"}}',
  '{"constructor":{"prototype":{"optional":true}}}',
  '{"prototype":{"optional":true}}',
  '{"name":"A","email":"a@example.com","metadata":{"__proto__":{"optional":true}}}',
  '{"a":[{"b":{"constructor":{"prototype":{"optional":true}}}}]}',
  '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","value":{"__proto__":{"optional":true}}}]}',
]

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

describe('Keys that lead into a prototype', () => {
  test('sent to every route, in the query and the body, change no built-in object and open nothing', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const routes = t.app.routes
      .filter((route) => route.path !== '/*' && route.method !== 'ALL')
      .map((route) => ({ method: route.method, path: route.path.replace(/:[A-Za-z]+/g, '1') }))
    expect(routes.length).toBeGreaterThan(100)
    const before = snapshot()
    const failures: string[] = []
    let refusedQueries = 0
    let refusedBodies = 0
    for (const { method, path } of routes) {
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
      for (const query of QUERIES) {
        const reply = await readReply(
          await t.app.handle(new Request(`http://localhost${path}?${query}`, { method, headers })),
        )
        if (reply.status !== 400) failures.push(`${method} ${path}?${query} → ${reply.status}`)
        else refusedQueries++
      }
      if (!WRITES.has(method)) continue
      for (const body of BODIES) {
        const reply = await readReply(
          await t.app.handle(new Request(`http://localhost${path}`, { method, headers, body })),
        )
        if (reply.status >= 500) failures.push(`${method} ${path} ${body} → ${reply.status}`)
        if (reply.status === 400 || reply.status === 422) refusedBodies++
      }
      const changed = changes(before, snapshot())
      if (changed.length > 0) failures.push(`${method} ${path} changed ${changed.join(', ')}`)
    }
    expect(failures).toEqual([])
    expect(refusedQueries).toBe(routes.length * QUERIES.length)
    // Most writes read a JSON body; every one that does refuses these.
    expect(refusedBodies).toBeGreaterThan(100)
    expect(({} as Record<string, unknown>).optional).toBeUndefined()
    expect((await t.get('/api-keys')).status).toBe(401)
    expect((await t.get('/mail')).status).toBe(401)
    expect((await t.get('/users')).status).toBe(401)
  })

  test('in a JSON body are 422 naming where they are, and change nothing', async () => {
    await using t = await makeTestApp()
    const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const body = '{"name":"Ada","email":"ada@example.com","x":{"y":[{"constructor":{}}]}}'
    const reply = await readReply(
      await t.app.handle(new Request('http://localhost/users', { method: 'POST', headers, body })),
    )
    expect(reply.status).toBe(422)
    expect(reply.body.error.code).toBe('VALIDATION_ERROR')
    expect(reply.body.error.details[0].field).toBe('x.y.0.constructor')
    expect((await t.get('/users', { headers })).body.data).toEqual([])
  })

  test('in a query are 400 on any path, before routing; in values they are plain text', async () => {
    await using t = await makeTestApp()
    const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const headers = { authorization: `Bearer ${key}` }
    const refused = await t.get('/users?constructor=1', { headers })
    expect(refused.status).toBe(400)
    expect(refused.body.error.details[0].field).toBe('constructor')
    expect((await t.get('/nowhere?__proto__=1')).status).toBe(400)
    expect((await t.get('/users?q=constructor', { headers })).status).toBe(200)
    expect((await t.get('/users?q=__proto__.prototype', { headers })).status).toBe(200)
  })
})
