// CONTRACT section 17, over HTTP: no credential creates, changes or revokes a credential or an
// account that holds more than it does, directly or through a chain of steps. Each case is one
// of the third outside review's chains. Runs on SQLite (npm test) and PostgreSQL
// (npm run test:postgres); the key rules across two instances: test/stores/api-keys.test.ts.

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import type { Grant } from '../../src/auth/access'
import { type Operation, RULES } from '../../src/routes/authorisation'
import { expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { PASSWORD } from '../helpers/auth'
import { expectScimError, GROUP, PATCH, USER } from './scim/helpers'

async function keyWith(t: TestApp, scopes: Grant[], expiresAt?: string) {
  const { key, id } = await t.deps.apiKeys.create(
    { name: scopes.join(' '), scopes, expiresAt },
    SYSTEM,
  )
  return { id, key, headers: { authorization: `Bearer ${key}` } }
}

/** An admin (with a password), signed in; and a second admin, so neither is the last. */
async function admins(t: TestApp) {
  const root = await keyWith(t, ['*'])
  const made = await t.post(
    '/users',
    { name: 'Root', email: 'root@example.com', password: PASSWORD, role: 'admin' },
    { headers: root.headers },
  )
  await t.post(
    '/users',
    { name: 'Second', email: 'second@example.com', password: PASSWORD, role: 'admin' },
    { headers: root.headers },
  )
  const login = await t.post('/login', { email: 'root@example.com', password: PASSWORD })
  return {
    root,
    adminId: made.body.id as number,
    asAdmin: { authorization: `Bearer ${login.body.access_token}` },
  }
}

const signsIn = async (t: TestApp, email: string, password: string) =>
  (await t.post('/login', { email, password })).status === 200

describe('Authority never grows: users:write covers members only', () => {
  test('a users:write key cannot make an admin, by creating one or promoting a member', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    await admins(t)
    const writer = await keyWith(t, ['users:write'])
    const created = expectEnvelope(
      await t.post(
        '/users',
        { name: 'Mallory', email: 'mallory@example.com', password: PASSWORD, role: 'admin' },
        { headers: writer.headers },
      ),
      403,
      'FORBIDDEN',
    )
    expect(created.details[0]).toMatchObject({ field: 'role', received: 'users:write' })
    expect(created.details[0]?.message).toContain('* is required')
    expect(await signsIn(t, 'mallory@example.com', PASSWORD)).toBe(false)
    const member = await t.post(
      '/users',
      { name: 'M', email: 'm@example.com', password: PASSWORD },
      { headers: writer.headers },
    )
    expect(member.status).toBe(201)
    expectEnvelope(
      await t.call('PATCH', `/users/${member.body.id}`, {
        json: { role: 'admin' },
        headers: writer.headers,
      }),
      403,
      'FORBIDDEN',
    )
    expect((await t.get(`/users/${member.body.id}`, { headers: writer.headers })).body.role).toBe(
      'member',
    )
  })

  test('a users:write key changes no admin: password, email, username, activity, deletion, factors, invitation', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { adminId } = await admins(t)
    const writer = await keyWith(t, ['users:write'])
    const attempts: [string, string, object?][] = [
      ['PATCH', `/users/${adminId}`, { password: 'a stolen new passphrase' }],
      ['PATCH', `/users/${adminId}`, { email: 'thief@example.com' }],
      ['PATCH', `/users/${adminId}`, { username: 'thief' }],
      ['PATCH', `/users/${adminId}`, { active: false }],
      ['PATCH', `/users/${adminId}`, { role: 'member' }],
      ['PUT', `/users/${adminId}`, { name: 'Root', email: 'thief@example.com' }],
      ['DELETE', `/users/${adminId}`],
      ['DELETE', `/users/${adminId}/factors`],
      ['POST', `/users/${adminId}/invite`, {}],
    ]
    for (const [method, path, json] of attempts) {
      const reply = await t.call(method, path, { json, headers: writer.headers })
      const error = expectEnvelope(reply, 403, 'FORBIDDEN')
      expect({ method, path, message: error.details[0]?.message }).toMatchObject({
        method,
        path,
        message: expect.stringContaining('* is required'),
      })
    }
    const record = (await t.get(`/users/${adminId}`, { headers: writer.headers })).body
    expect(record).toMatchObject({ email: 'root@example.com', role: 'admin', active: true })
    expect(await signsIn(t, 'root@example.com', PASSWORD)).toBe(true)
    expect((await t.get('/mail', { headers: writer.headers })).status).toBe(403)
  })

  test('every operation the table marks as `*` on an admin refuses users:write there', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { adminId } = await admins(t)
    const writer = await keyWith(t, ['users:write'])
    const marked = (Object.entries(RULES) as [Operation, { admins?: string }][])
      .filter(([operation, rule]) => rule.admins === '*' && operation !== 'POST /users')
      .map(([operation]) => operation)
    expect(marked.length).toBeGreaterThanOrEqual(5)
    for (const operation of marked) {
      const [method, path] = operation.split(' ') as [string, string]
      const body = method === 'DELETE' ? undefined : { name: 'X', email: 'x@example.com' }
      const reply = await t.call(method, path.replace(':id', String(adminId)), {
        json: body,
        headers: writer.headers,
      })
      expect({ operation, status: reply.status }).toEqual({ operation, status: 403 })
    }
  })

  test('a key with * and an admin’s own token still do all of it', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { root, asAdmin } = await admins(t)
    const member = await t.post(
      '/users',
      { name: 'M', email: 'm@example.com', password: PASSWORD },
      { headers: root.headers },
    )
    const promoted = await t.call('PATCH', `/users/${member.body.id}`, {
      json: { role: 'admin' },
      headers: asAdmin,
    })
    expect(promoted.body.role).toBe('admin')
    const moved = await t.call('PATCH', `/users/${member.body.id}`, {
      json: { email: 'moved@example.com' },
      headers: root.headers,
    })
    expect(moved.body.email).toBe('moved@example.com')
    expect((await t.get('/mail', { headers: asAdmin })).status).toBe(200)
  })
})

describe('Authority never grows: a SCIM key holds only what SCIM provisioned', () => {
  test('it sets no password of an account it did not provision, nor an admin’s, and signs in as nobody', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected', scimPasswords: true })
    const { adminId, root } = await admins(t)
    const scim = {
      ...(await keyWith(t, ['scim'])).headers,
      'content-type': 'application/scim+json',
    }
    const outside = await t.post(
      '/users',
      { name: 'Out', email: 'out@example.com', password: PASSWORD },
      { headers: root.headers },
    )
    for (const id of [adminId, outside.body.id]) {
      const reply = await t.call('PATCH', `/scim/v2/Users/${id}`, {
        json: {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'password', value: 'a stolen new passphrase' }],
        },
        headers: scim,
      })
      expectScimError(reply, 403)
      expectScimError(await t.call('DELETE', `/scim/v2/Users/${id}`, { headers: scim }), 403)
    }
    expect(await signsIn(t, 'root@example.com', 'a stolen new passphrase')).toBe(false)
    expect(await signsIn(t, 'out@example.com', 'a stolen new passphrase')).toBe(false)
    expect(await signsIn(t, 'root@example.com', PASSWORD)).toBe(true)
  })

  test('an account it provisioned and an admin later promoted is no longer its to change', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { root } = await admins(t)
    const scim = {
      ...(await keyWith(t, ['scim'])).headers,
      'content-type': 'application/scim+json',
    }
    const made = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'p@example.com' },
      headers: scim,
    })
    expect(made.status).toBe(201)
    const renamed = await t.call('PATCH', `/scim/v2/Users/${made.body.id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'P' }] },
      headers: scim,
    })
    expect(renamed.status).toBe(200)
    await t.call('PATCH', `/users/${made.body.id}`, {
      json: { role: 'admin' },
      headers: root.headers,
    })
    const refused = await t.call('PATCH', `/scim/v2/Users/${made.body.id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] },
      headers: scim,
    })
    expectScimError(refused, 403)
    expect((await t.get(`/users/${made.body.id}`, { headers: root.headers })).body.active).toBe(
      true,
    )
  })

  test('it sets a password only with --scim-passwords, and then only on its own accounts', async () => {
    for (const scimPasswords of [false, true]) {
      await using t = await makeTestApp({ usersAccess: 'protected', scimPasswords })
      const scim = {
        ...(await keyWith(t, ['scim'])).headers,
        'content-type': 'application/scim+json',
      }
      const made = await t.call('POST', '/scim/v2/Users', {
        json: { schemas: [USER], userName: 'p@example.com', password: PASSWORD },
        headers: scim,
      })
      if (!scimPasswords) {
        expectScimError(made, 400, 'invalidValue')
        continue
      }
      expect(made.status).toBe(201)
      expect(await signsIn(t, 'p@example.com', PASSWORD)).toBe(true)
    }
  })
})

describe('Authority never grows: a SCIM key holds only the groups SCIM provisioned', () => {
  test('a group made through /groups is not SCIM’s to change or delete; one SCIM made stays its own without an externalId', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { root } = await admins(t)
    const scim = {
      ...(await keyWith(t, ['scim'])).headers,
      'content-type': 'application/scim+json',
    }
    const local = await t.post('/groups', { name: 'Admins' }, { headers: root.headers })
    expect(local.status).toBe(201)
    const id = local.body.id
    expect((await t.get(`/scim/v2/Groups/${id}`, { headers: scim })).status).toBe(200)
    expectScimError(
      await t.call('PATCH', `/scim/v2/Groups/${id}`, {
        json: {
          schemas: [PATCH],
          Operations: [{ op: 'replace', path: 'displayName', value: 'X' }],
        },
        headers: scim,
      }),
      403,
    )
    expectScimError(
      await t.call('PUT', `/scim/v2/Groups/${id}`, {
        json: { schemas: [GROUP], displayName: 'X' },
        headers: scim,
      }),
      403,
    )
    expectScimError(await t.call('DELETE', `/scim/v2/Groups/${id}`, { headers: scim }), 403)
    expect((await t.get(`/groups/${id}`, { headers: root.headers })).body.name).toBe('Admins')
    const own = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Engineering' },
      headers: scim,
    })
    const replaced = await t.call('PUT', `/scim/v2/Groups/${own.body.id}`, {
      json: { schemas: [GROUP], displayName: 'Eng' },
      headers: scim,
    })
    expect(replaced.status).toBe(200)
    expect(replaced.body.externalId).toBeUndefined()
    const renamed = await t.call('PATCH', `/scim/v2/Groups/${own.body.id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'E' }] },
      headers: scim,
    })
    expect(renamed.body.displayName).toBe('E')
    expect(
      (await t.call('DELETE', `/scim/v2/Groups/${own.body.id}`, { headers: scim })).status,
    ).toBe(204)
  })
})

describe('Authority never grows: keys', () => {
  test('a key that expires mints no key that outlives it: expires_at is clamped, and the answer says so', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const soon = new Date(Date.now() + 3_000).toISOString()
    const parent = await keyWith(t, ['keys:write', 'users:read'], soon)
    const forever = await t.post('/api-keys', { name: 'child' }, { headers: parent.headers })
    expect(forever.status).toBe(201)
    expect(forever.body).toMatchObject({ expires_at: soon, expires_at_clamped: true })
    const later = new Date(Date.now() + 86_400_000).toISOString()
    const tooLate = await t.post(
      '/api-keys',
      { name: 'child', expires_at: later },
      { headers: parent.headers },
    )
    expect(tooLate.body).toMatchObject({ expires_at: soon, expires_at_clamped: true })
    const earlier = new Date(Date.now() + 2_000).toISOString()
    const within = await t.post(
      '/api-keys',
      { name: 'child', expires_at: earlier },
      { headers: parent.headers },
    )
    expect(within.body).toMatchObject({ expires_at: earlier, expires_at_clamped: false })
  })

  test('a key an admin made with its session stops working when the admin is demoted, deactivated or deleted', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { root, adminId, asAdmin } = await admins(t)
    const minted = await t.post('/api-keys', { name: 'mine' }, { headers: asAdmin })
    expect(minted.body).toMatchObject({ scopes: ['*'], created_by_user: adminId, parent_id: null })
    const asKey = { authorization: `Bearer ${minted.body.key}` }
    const child = await t.post('/api-keys', { name: 'grandchild' }, { headers: asKey })
    expect(child.body.created_by_user).toBe(adminId)
    const asChild = { authorization: `Bearer ${child.body.key}` }
    expect((await t.get('/api-keys', { headers: asKey })).status).toBe(200)
    const change = (json: object) =>
      t.call('PATCH', `/users/${adminId}`, { json, headers: root.headers })
    for (const [away, back] of [
      [{ role: 'member' }, { role: 'admin' }],
      [{ active: false }, { active: true }],
    ]) {
      expect((await change(away as object)).status).toBe(200)
      expectEnvelope(await t.get('/api-keys', { headers: asKey }), 401, 'UNAUTHORIZED')
      expectEnvelope(await t.get('/api-keys', { headers: asChild }), 401, 'UNAUTHORIZED')
      expect((await change(back as object)).status).toBe(200)
    }
    expect((await t.call('DELETE', `/users/${adminId}`, { headers: root.headers })).status).toBe(
      200,
    )
    expectEnvelope(await t.get('/api-keys', { headers: asKey }), 401, 'UNAUTHORIZED')
    expectEnvelope(await t.get('/api-keys', { headers: asChild }), 401, 'UNAUTHORIZED')
  })

  test('revoking needs authority over the key: a keys:write-only key cannot revoke a * key', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const { root, asAdmin } = await admins(t)
    const keysOnly = await keyWith(t, ['keys:write'])
    const refused = expectEnvelope(
      await t.call('DELETE', `/api-keys/${root.id}`, { headers: keysOnly.headers }),
      403,
      'FORBIDDEN',
    )
    expect(refused.details[0]).toMatchObject({ field: 'scope', received: 'keys:write' })
    expect((await t.get('/api-keys', { headers: root.headers })).status).toBe(200)
    // Its own child (made by it, so no more than it) it may revoke, and a grandchild too.
    const child = await t.post('/api-keys', { name: 'child' }, { headers: keysOnly.headers })
    const asChild = { authorization: `Bearer ${child.body.key}` }
    const grandchild = await t.post('/api-keys', { name: 'gc' }, { headers: asChild })
    const revoked = await t.call('DELETE', `/api-keys/${grandchild.body.id}`, {
      headers: keysOnly.headers,
    })
    expect(revoked.body).toEqual({ id: grandchild.body.id, revoked: true })
    // A child cannot revoke its parent when the parent holds what it does not (the same here:
    // it covers it), and an admin revokes anything.
    expect((await t.call('DELETE', `/api-keys/${root.id}`, { headers: asAdmin })).status).toBe(200)
    expectEnvelope(await t.get('/api-keys', { headers: root.headers }), 401, 'UNAUTHORIZED')
  })
})
