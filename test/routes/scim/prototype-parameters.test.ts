// CONTRACT section 17: `__proto__`, `constructor` and `prototype` are refused in queries and
// SCIM paths (400 invalidPath). The query *names* are checked before routing; these are SCIM
// attribute paths given as query *values* (sortBy, attributes, excludedAttributes) and in a
// .search body, which a lookup table keyed by the lower-cased name answers from its prototype.

import { describe, expect, test } from 'bun:test'
import { makeTestApp } from '../../helpers/app'
import { expectScimError, GROUP, scimKey, USER } from './helpers'

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest'
const PROTOTYPE_NAMES = ['__proto__', '__PROTO__', 'constructor', `${USER}:constructor`]

describe('A SCIM list sorted by a prototype key', () => {
  test('is 400 in SCIM’s form, never a 500, for Users, Groups and .search', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const headers = await scimKey(t)
    await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'ada@example.com' },
      headers,
    })
    await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Engineering' },
      headers,
    })
    for (const sortBy of PROTOTYPE_NAMES) {
      const query = `sortBy=${encodeURIComponent(sortBy)}`
      for (const reply of [
        await t.get(`/scim/v2/Users?${query}`, { headers }),
        await t.get(`/scim/v2/Groups?${query}`, { headers }),
        await t.call('POST', '/scim/v2/Users/.search', {
          json: { schemas: [SEARCH], sortBy },
          headers,
        }),
      ]) {
        expect({ sortBy, status: reply.status }).toEqual({ sortBy, status: 400 })
        expectScimError(reply, 400)
        expect(['invalidPath', 'invalidValue']).toContain(reply.body.scimType)
      }
    }
  })
})

describe('attributes and excludedAttributes naming a prototype key', () => {
  test('are 400 invalidPath on one resource and on a list', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const headers = await scimKey(t)
    const made = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'ada@example.com' },
      headers,
    })
    for (const parameter of ['attributes', 'excludedAttributes']) {
      for (const name of ['__proto__', 'constructor', 'emails.__proto__', 'name.prototype']) {
        const query = `${parameter}=${encodeURIComponent(name)}`
        for (const path of [`/scim/v2/Users/${made.body.id}?${query}`, `/scim/v2/Users?${query}`]) {
          const reply = await t.get(path, { headers })
          expect({ path, status: reply.status }).toEqual({ path, status: 400 })
          expectScimError(reply, 400, 'invalidPath')
        }
      }
    }
  })
})
