// CONTRACT section 17: a SCIM key holds the accounts and groups SCIM provisioned, never an
// admin. Users are guarded (test/routes/authority.test.ts); these are the Groups routes, which
// change groups the operator made and the memberships of admins and of accounts SCIM never
// provisioned.

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { makeTestApp, type TestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'
import { eventCount, expectScimError, GROUP, PATCH, scimKey } from './helpers'

/** The operator's side: a `*` key, an admin and a member made through /users, a group through /groups. */
async function operatorMade(t: TestApp) {
  const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
  const headers = { authorization: `Bearer ${key}` }
  const ids: number[] = []
  for (const [name, email, role] of [
    ['Root', 'root@example.com', 'admin'],
    ['Second', 'second@example.com', 'admin'],
    ['Member', 'member@example.com', 'member'],
  ]) {
    const made = await t.post('/users', { name, email, password: PASSWORD, role }, { headers })
    ids.push(made.body.id as number)
  }
  const group = await t.post('/groups', { name: 'Operators', description: 'by hand' }, { headers })
  expect(group.status).toBe(201)
  const [adminId, , memberId] = ids as [number, number, number]
  return { headers, adminId, memberId, groupId: group.body.id as number }
}

const addMember = (id: number) => ({
  schemas: [PATCH],
  Operations: [{ op: 'add', path: 'members', value: [{ value: String(id) }] }],
})

describe('A SCIM key and the groups it did not provision', () => {
  test('renaming, replacing, patching or deleting a group made through /groups is 403 and changes nothing', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { headers, adminId, memberId, groupId } = await operatorMade(t)
    const scim = await scimKey(t)
    const before = (await t.get(`/groups/${groupId}`, { headers })).body
    const events = await eventCount(t, 'group', String(groupId))
    const attempts: [string, object?][] = [
      ['PATCH', addMember(memberId)],
      [
        'PATCH',
        {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'displayName', value: 'Taken' }],
        },
      ],
      ['PUT', { schemas: [GROUP], displayName: 'Taken', members: [{ value: String(adminId) }] }],
      ['DELETE'],
    ]
    for (const [method, json] of attempts) {
      const reply = await t.call(method, `/scim/v2/Groups/${groupId}`, { json, headers: scim })
      expect({ method, status: reply.status }).toEqual({ method, status: 403 })
      expectScimError(reply, 403)
    }
    expect((await t.get(`/groups/${groupId}`, { headers })).body).toEqual(before)
    expect(await eventCount(t, 'group', String(groupId))).toBe(events)
  })
})

describe('A SCIM key and an admin’s group memberships', () => {
  test('putting an admin into a group (PATCH, PUT or POST of a group SCIM makes) is 403 and leaves the admin as it was', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { headers, adminId } = await operatorMade(t)
    const scim = await scimKey(t)
    const made = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Engineering' },
      headers: scim,
    })
    expect(made.status).toBe(201)
    const admin = (await t.get(`/users/${adminId}`, { headers })).body
    const added = await t.call('PATCH', `/scim/v2/Groups/${made.body.id}`, {
      json: addMember(adminId),
      headers: scim,
    })
    expectScimError(added, 403)
    const replaced = await t.call('PUT', `/scim/v2/Groups/${made.body.id}`, {
      json: { schemas: [GROUP], displayName: 'Engineering', members: [{ value: String(adminId) }] },
      headers: scim,
    })
    expectScimError(replaced, 403)
    const created = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Admins too', members: [{ value: String(adminId) }] },
      headers: scim,
    })
    expectScimError(created, 403)
    expect((await t.get(`/users/${adminId}`, { headers })).body).toEqual(admin)
  })
})
