import { afterEach, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../../helpers/app'
import { expectScimError, GROUP, PATCH, scimKey, USER } from './helpers'

// The third outside review's critical finding: a SCIM PATCH whose path walks into
// Object.prototype wrote there through scim-patch, and the auth macro then read `optional`
// from every requirement's prototype, letting anonymous callers into every protected route.

const HOSTILE_PATHS = [
  '__proto__.optional',
  '__PROTO__.optional',
  'constructor.prototype.optional',
  'Constructor.Prototype.optional',
  'name.__proto__.optional',
  'name.constructor.prototype.optional',
  'emails[type eq "work"].__proto__',
  'emails[__proto__ eq "x"].value',
  'members[value eq "1"].constructor',
  `${USER}:__proto__.optional`,
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:constructor.prototype.optional',
  'favouriteColour',
  'name.middleName.x',
]

function prototypeIsClean() {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(CLEAN_NAMES)
  expect(({} as Record<string, unknown>).optional).toBeUndefined()
}
const CLEAN_NAMES = Object.getOwnPropertyNames(Object.prototype).sort()

afterEach(() => {
  // Whatever a failing test left behind must not let the next one pass.
  delete (Object.prototype as Record<string, unknown>).optional
})

async function anonymousIsRefused(t: TestApp) {
  expect((await t.get('/api-keys')).status).toBe(401)
  expect((await t.get('/mail')).status).toBe(401)
}

describe('A SCIM PATCH path', () => {
  for (const resource of ['Users', 'Groups'] as const) {
    test(`that names no attribute of a ${resource} is 400 invalidPath and reaches no prototype`, async () => {
      await using t = await makeTestApp({ usersAccess: 'protected' })
      const headers = await scimKey(t)
      const body =
        resource === 'Users'
          ? { schemas: [USER], userName: 'ada@example.com' }
          : { schemas: [GROUP], displayName: 'Engineering' }
      const created = await t.call('POST', `/scim/v2/${resource}`, { json: body, headers })
      expect(created.status).toBe(201)
      for (const path of HOSTILE_PATHS) {
        for (const op of ['add', 'replace', 'remove']) {
          const reply = await t.call('PATCH', `/scim/v2/${resource}/${created.body.id}`, {
            json: { schemas: [PATCH], Operations: [{ op, path, value: true }] },
            headers,
          })
          expectScimError(reply, 400, 'invalidPath')
          prototypeIsClean()
        }
      }
      await anonymousIsRefused(t)
      const after = await t.call('GET', `/scim/v2/${resource}/${created.body.id}`, { headers })
      expect(after.body.meta.version).toBe(created.body.meta.version)
    })
  }

  test('without a path, whose value names a prototype key, is refused and reaches no prototype', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'ada@example.com' },
      headers,
    })
    for (const value of [
      '{"__proto__":{"optional":true}}',
      '{"constructor":{"prototype":{"optional":true}}}',
      '{"name":{"__proto__":{"optional":true}}}',
    ]) {
      const reply = await t.call('PATCH', `/scim/v2/Users/${created.body.id}`, {
        body: `{"schemas":["${PATCH}"],"Operations":[{"op":"replace","value":${value}}]}`,
        headers,
      })
      expectScimError(reply, 400)
      prototypeIsClean()
    }
    await anonymousIsRefused(t)
  })
})

describe('A SCIM filter', () => {
  test('naming a prototype key is 400 invalidFilter', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    for (const filter of ['__proto__ eq "x"', 'constructor pr', 'name.prototype eq "x"']) {
      const reply = await t.call('GET', `/scim/v2/Users?filter=${encodeURIComponent(filter)}`, {
        headers,
      })
      expectScimError(reply, 400, 'invalidFilter')
      prototypeIsClean()
    }
  })
})
