import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { makeTestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'
import { ENTERPRISE, eventCount, expectScimError, PATCH, scimKey, USER } from './helpers'

const barbara = {
  schemas: [USER, ENTERPRISE],
  externalId: '00u1abcd',
  userName: 'bjensen@example.com',
  name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara' },
  displayName: 'Babs Jensen',
  emails: [
    { value: 'bjensen@example.com', type: 'work', primary: true },
    { value: 'babs@jensen.org', type: 'home' },
  ],
  active: true,
  [ENTERPRISE]: {
    employeeNumber: '701984',
    department: 'Tour Operations',
    manager: { value: '26118915-6090-4610-87e4-49d8ca9f808d' },
  },
}

describe('SCIM Users', () => {
  test('create: 201 with Location, ETag and the resource; the same record in /users', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    expect(created.status).toBe(201)
    expect(created.headers.get('content-type')).toStartWith('application/scim+json')
    const id = created.body.id
    expect(created.headers.get('location')).toBe(`http://localhost/scim/v2/Users/${id}`)
    expect(created.headers.get('etag')).toBe(created.body.meta.version)
    expect(created.body).toMatchObject({
      schemas: [USER, ENTERPRISE],
      externalId: '00u1abcd',
      userName: 'bjensen@example.com',
      displayName: 'Babs Jensen',
      name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara' },
      emails: [
        { value: 'bjensen@example.com', type: 'work', primary: true },
        { value: 'babs@jensen.org', type: 'home', primary: false },
      ],
      active: true,
      groups: [],
      [ENTERPRISE]: {
        employeeNumber: '701984',
        department: 'Tour Operations',
        manager: { value: '26118915-6090-4610-87e4-49d8ca9f808d' },
      },
      meta: { resourceType: 'User', location: `http://localhost/scim/v2/Users/${id}` },
    })
    const record = await t.get(`/users/${id}`, {
      headers: {
        authorization: headers.authorization.replace('Bearer ', 'Bearer '),
        'x-api-key': (await t.deps.apiKeys.create({ name: 'all', scopes: ['*'] }, SYSTEM)).key,
      },
    })
    expect(record.body).toMatchObject({
      name: 'Babs Jensen',
      email: 'bjensen@example.com',
      username: 'bjensen@example.com',
      active: true,
    })
    const read = await t.get(`/scim/v2/users/${id}`, { headers })
    expect(read.body).toEqual(created.body)
  })

  test('a user made through /users is visible with userName equal to its email', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'Ada@example.com', password: PASSWORD })
    const headers = await scimKey(t)
    const list = await t.get('/scim/v2/Users?filter=userName%20eq%20%22ada@EXAMPLE.com%22', {
      headers,
    })
    expect(list.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 1,
      itemsPerPage: 1,
      startIndex: 1,
    })
    expect(list.body.Resources[0]).toMatchObject({
      userName: 'Ada@example.com',
      displayName: 'Ada',
      emails: [{ value: 'Ada@example.com', primary: true }],
      active: true,
    })
  })

  test('filters: the RFC operators, value paths, dates, and paging', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    for (let i = 1; i <= 3; i++) {
      await t.call('POST', '/scim/v2/Users', {
        json: {
          schemas: [USER],
          userName: `user${i}`,
          emails: [{ value: `user${i}@corp.example`, type: 'work' }],
          active: i !== 2,
        },
        headers,
      })
    }
    const ids = async (filter: string, extra = '') => {
      const reply = await t.get(`/scim/v2/Users?filter=${encodeURIComponent(filter)}${extra}`, {
        headers,
      })
      expect({ filter, status: reply.status }).toEqual({ filter, status: 200 })
      return reply.body.Resources.map((user: { userName: string }) => user.userName)
    }
    expect(await ids('userName sw "user"')).toEqual(['user1', 'user2', 'user3'])
    expect(await ids('userName ew "3"')).toEqual(['user3'])
    expect(await ids('userName co "ENSEN"')).toEqual(['bjensen@example.com'])
    expect(await ids('active eq false')).toEqual(['user2'])
    expect(await ids('active eq "True" and userName sw "user"')).toEqual(['user1', 'user3'])
    expect(await ids('not (userName sw "user")')).toEqual(['bjensen@example.com'])
    expect(await ids('externalId eq "00u1abcd"')).toEqual(['bjensen@example.com'])
    expect(await ids('externalId pr')).toEqual(['bjensen@example.com'])
    expect(await ids('emails[type eq "home" and value co "jensen.org"]')).toEqual([
      'bjensen@example.com',
    ])
    expect(await ids('emails.value eq "USER1@corp.example"')).toEqual(['user1'])
    expect(await ids('emails[type eq "work"]')).toHaveLength(4)
    expect(await ids('name.familyName eq "jensen" or userName eq "user2"')).toEqual([
      'bjensen@example.com',
      'user2',
    ])
    expect(
      await ids(
        `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "Tour Operations"`,
      ),
    ).toEqual(['bjensen@example.com'])
    expect(await ids('meta.created gt "2000-01-01T00:00:00Z"')).toHaveLength(4)
    expect(await ids('meta.lastModified lt "2000-01-01T00:00:00Z"')).toEqual([])
    expect(await ids('userName ne "user1"')).toHaveLength(3)
    expect(
      await ids('userName sw "user"', '&sortBy=userName&sortOrder=descending&startIndex=2&count=1'),
    ).toEqual(['user2'])
    const counted = await t.get('/scim/v2/Users?count=0', { headers })
    expect(counted.body).toMatchObject({ totalResults: 4, itemsPerPage: 0, Resources: [] })
  })

  test('startIndex and count out of range are taken to their nearest bound; a word is 400 invalidValue', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    for (const name of ['ada', 'bob', 'cy']) {
      const made = await t.call('POST', '/scim/v2/Users', {
        json: { schemas: [USER], userName: `${name}@example.com` },
        headers,
      })
      expect(made.status).toBe(201)
    }
    const page = async (query: string) => {
      const listed = await t.get(`/scim/v2/Users?sortBy=userName&${query}`, { headers })
      expect(listed.status).toBe(200)
      const body = listed.body as { startIndex: number; Resources: { userName: string }[] }
      return { startIndex: body.startIndex, names: body.Resources.map((user) => user.userName) }
    }
    const everyone = ['ada@example.com', 'bob@example.com', 'cy@example.com']
    expect(await page('startIndex=0&count=2')).toEqual({
      startIndex: 1,
      names: everyone.slice(0, 2),
    })
    expect(await page('startIndex=-5')).toEqual({ startIndex: 1, names: everyone })
    expect(await page('startIndex=%2B2&count=%2B1')).toEqual({
      startIndex: 2,
      names: ['bob@example.com'],
    })
    expect(await page('startIndex=99999999999')).toEqual({ startIndex: 2 ** 31 - 1, names: [] })
    expect(await page(`startIndex=${'9'.repeat(400)}`)).toEqual({
      startIndex: 2 ** 31 - 1,
      names: [],
    })
    expect(await page('count=-1')).toEqual({ startIndex: 1, names: [] })
    expect(await page('count=99999999999999999999')).toEqual({ startIndex: 1, names: everyone })
    for (const query of ['count=abc', 'count=1.5', 'startIndex=1e3', 'startIndex=', 'count=0x10']) {
      const refused = await t.get(`/scim/v2/Users?${query}`, { headers })
      expectScimError(refused, 400, 'invalidValue')
    }
  })

  test('a filter that cannot be parsed, names what roster lacks or compares a value of the wrong type is 400 invalidFilter', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    for (const filter of [
      'userName eq',
      'userName xx "a"',
      '((((',
      'shoeSize eq "x"',
      'active gt true',
      'meta.created gt "yesterday"',
      'name.familyName eq 12',
      'userName eq true',
      'a'.repeat(10_000),
      `${'('.repeat(5000)}userName eq "a"${')'.repeat(5000)}`,
      `${'not ('.repeat(300)}userName eq "a"${')'.repeat(300)}`,
      'groups[value eq "1"]',
      'userName eq "a\u0000b"',
      `userName eq "a${String.fromCharCode(0)}"`,
      'externalId sw "\u001b[31m"',
    ]) {
      const reply = await t.get(`/scim/v2/Users?filter=${encodeURIComponent(filter)}`, { headers })
      expectScimError(reply, 400, 'invalidFilter')
    }
    // Deep but within the limits: parsed, compiled and answered.
    const deep = `${'('.repeat(900)}userName eq "a"${')'.repeat(900)}`
    const answered = await t.get(`/scim/v2/Users?filter=${encodeURIComponent(deep)}`, { headers })
    expect(answered.body).toMatchObject({ totalResults: 0, Resources: [] })
  })

  test('PATCH: Entra and Okta habits; deactivation ends sessions and refuses sign-in', async () => {
    await using t = await makeTestApp({ scimPasswords: true })
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', {
      json: { ...barbara, password: PASSWORD },
      headers,
    })
    const id = created.body.id
    const login = await t.post('/login', { username: 'bjensen@example.com', password: PASSWORD })
    const asBarbara = { authorization: `Bearer ${login.body.access_token}` }
    expect((await t.get('/me', { headers: asBarbara })).status).toBe(200)
    const patched = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: {
        schemas: [PATCH],
        Operations: [
          { op: 'Replace', path: 'name.GivenName', value: 'Babs' },
          { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Sales' },
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'barbara@example.com' },
          { op: 'remove', path: 'emails[type eq "home"]' },
        ],
      },
      headers,
    })
    expect(patched.status).toBe(200)
    expect(patched.body.name.givenName).toBe('Babs')
    expect(patched.body[ENTERPRISE].department).toBe('Sales')
    expect(patched.body.emails).toEqual([
      { value: 'barbara@example.com', type: 'work', primary: true },
    ])
    expect(patched.body.meta.version).not.toBe(created.body.meta.version)
    const off = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: 'False' } }] },
      headers,
    })
    expect(off.body.active).toBe(false)
    expect((await t.get('/me', { headers: asBarbara })).status).toBe(401)
    expect(
      (await t.post('/login', { username: 'bjensen@example.com', password: PASSWORD })).status,
    ).toBe(403)
    const on = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] },
      headers,
    })
    expect(on.body.active).toBe(true)
    expect(
      (await t.post('/login', { username: 'bjensen@example.com', password: PASSWORD })).status,
    ).toBe(200)
  })

  test('a PATCH that changes nothing writes nothing: the same version, no event; a stale If-Match is still 412', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    const id = created.body.id
    const eventsOf = () => eventCount(t, 'user', id)
    const eventsBefore = await eventsOf()
    // Entra's cycle: every attribute sent again, as it is.
    const again = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: {
        schemas: [PATCH],
        Operations: [
          { op: 'Replace', path: 'displayName', value: 'Babs Jensen' },
          { op: 'Replace', path: 'active', value: 'True' },
          { op: 'replace', path: 'name.givenName', value: 'Barbara' },
          { op: 'add', path: `${ENTERPRISE}:department`, value: 'Tour Operations' },
        ],
      },
      headers,
    })
    expect(again.status).toBe(200)
    expect(again.body.meta.version).toBe(created.body.meta.version)
    expect(again.headers.get('etag')).toBe(created.headers.get('etag'))
    expect(again.body).toEqual(created.body)
    expect(await eventsOf()).toBe(eventsBefore)
    const stale = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] },
      headers: { ...headers, 'if-match': 'W/"999"' },
    })
    expectScimError(stale, 412)
    // One value that differs is a change, with its new version and its event.
    const renamed = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'B' }] },
      headers: { ...headers, 'if-match': created.body.meta.version },
    })
    expect(renamed.body.meta.version).not.toBe(created.body.meta.version)
    expect(await eventsOf()).toBe(eventsBefore + 1)
  })

  test('a user made outside SCIM is not SCIM’s: it reads it, but PATCH, PUT and DELETE are 403 and change nothing', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const made = await t.post('/users', { name: 'Outside', email: 'outside@example.com' })
    const id = made.body.id
    expect((await t.get(`/scim/v2/Users/${id}`, { headers })).status).toBe(200)
    const patched = await t.call('PATCH', `/scim/v2/Users/${id}`, {
      json: { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] },
      headers,
    })
    expectScimError(patched, 403)
    const replaced = await t.call('PUT', `/scim/v2/Users/${id}`, {
      json: { schemas: [USER], userName: 'taken@example.com' },
      headers,
    })
    expectScimError(replaced, 403)
    expectScimError(await t.call('DELETE', `/scim/v2/Users/${id}`, { headers }), 403)
    expect((await t.deps.scimUsers.provenance(id))?.provisioned).toBe(false)
    expect((await t.get(`/users/${id}`)).body).toMatchObject({
      email: 'outside@example.com',
      active: true,
    })
  })

  test('PATCH of a read-only attribute by path is 400 mutability; a path-less value may echo the id', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    const id = created.body.id
    const patch = (Operations: object[]) =>
      t.call('PATCH', `/scim/v2/Users/${id}`, { json: { schemas: [PATCH], Operations }, headers })
    expectScimError(await patch([{ op: 'replace', path: 'id', value: '7' }]), 400, 'mutability')
    expectScimError(
      await patch([{ op: 'replace', path: 'meta.created', value: 'x' }]),
      400,
      'mutability',
    )
    expectScimError(await patch([{ op: 'remove' }]), 400, 'noTarget')
    expectScimError(await patch([{ op: 'replace', path: '', value: 'x' }]), 400, 'invalidPath')
    expect((await patch([{ op: 'replace', value: 'x' }])).status).toBe(400)
    expectScimError(await patch([{ op: 'move', path: 'active' }]), 400, 'invalidSyntax')
    expectScimError(await patch([]), 400, 'invalidSyntax')
    const echoed = await patch([{ op: 'replace', value: { id, displayName: 'B' } }])
    expect({ id: echoed.body.id, displayName: echoed.body.displayName }).toEqual({
      id,
      displayName: 'B',
    })
    expectScimError(
      await t.call('PATCH', `/scim/v2/Users/${id}`, { json: { Operations: [] }, headers }),
      400,
      'invalidSyntax',
    )
  })

  test('PUT replaces; If-Match with a stale meta.version is 412; DELETE is 204 then 404', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    const id = created.body.id
    const replaced = await t.call('PUT', `/scim/v2/Users/${id}`, {
      json: {
        schemas: [USER],
        userName: 'babs',
        // Entra's habits: the primary second, flagged "Primary": "True".
        emails: [{ value: 'other@example.com' }, { value: 'babs@example.com', Primary: 'True' }],
        displayName: 'Babs',
      },
      headers: { ...headers, 'if-match': created.body.meta.version },
    })
    expect(replaced.status).toBe(200)
    expect(replaced.body).toMatchObject({
      userName: 'babs',
      displayName: 'Babs',
      emails: [
        { value: 'babs@example.com', primary: true },
        { value: 'other@example.com', primary: false },
      ],
    })
    expect(replaced.body.externalId).toBeUndefined()
    expect(replaced.body[ENTERPRISE]).toBeUndefined()
    const stale = await t.call('PUT', `/scim/v2/Users/${id}`, {
      json: { schemas: [USER], userName: 'other', emails: [{ value: 'babs@example.com' }] },
      headers: { ...headers, 'if-match': created.body.meta.version },
    })
    expectScimError(stale, 412)
    expect((await t.call('DELETE', `/scim/v2/Users/${id}`, { headers })).status).toBe(204)
    expectScimError(await t.call('DELETE', `/scim/v2/Users/${id}`, { headers }), 404)
    expectScimError(await t.get(`/scim/v2/Users/${id}`, { headers }), 404)
  })

  test('a taken userName or email is 409 uniqueness; bad values are 400 invalidValue; nothing is made', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    expectScimError(
      await t.call('POST', '/scim/v2/Users', {
        json: { ...barbara, userName: 'BJENSEN@example.com' },
        headers,
      }),
      409,
      'uniqueness',
    )
    expectScimError(
      await t.call('POST', '/scim/v2/Users', {
        json: { ...barbara, userName: 'other', emails: [{ value: 'BJensen@example.com' }] },
        headers,
      }),
      409,
      'uniqueness',
    )
    for (const json of [
      { schemas: [USER] },
      { schemas: [USER], userName: 'x' },
      { schemas: [USER], userName: 'x@example.com', active: 'maybe' },
      { schemas: [USER], userName: 'x@example.com', emails: 'x@example.com' },
      { schemas: [USER], userName: 'x@example.com', name: 'X' },
      { schemas: [USER], userName: 'x@example.com', externalId: 5 },
      { schemas: [USER], userName: 'x@example.com', password: 'short' },
    ]) {
      expectScimError(
        await t.call('POST', '/scim/v2/Users', { json, headers }),
        400,
        'invalidValue',
      )
    }
    expectScimError(
      await t.call('POST', '/scim/v2/Users', { json: { userName: 'x@example.com' }, headers }),
      400,
      'invalidSyntax',
    )
    expect(await t.deps.users.count()).toBe(1)
  })

  test('401 without a scim key, in SCIM form; a key without the scope is 403', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const none = await t.get('/scim/v2/Users')
    expectScimError(none, 401)
    const other = await scimKey(t, ['users:read'])
    expectScimError(await t.get('/scim/v2/Users', { headers: other }), 403)
    const wrong = await t.get('/scim/v2/Users', { headers: { authorization: 'Bearer rk_nope' } })
    expectScimError(wrong, 401)
  })

  test('discovery: ServiceProviderConfig, ResourceTypes and Schemas, by any case', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const config = await t.get('/scim/v2/serviceproviderconfig', { headers })
    expect(config.body).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 200 },
      etag: { supported: true },
      sort: { supported: true },
    })
    const types = await t.get('/scim/v2/ResourceTypes', { headers })
    expect(types.body.Resources.map((type: { id: string }) => type.id)).toEqual(['User', 'Group'])
    expect((await t.get('/scim/v2/resourcetypes/user', { headers })).body.schemaExtensions).toEqual(
      [{ schema: ENTERPRISE, required: false }],
    )
    const schemas = await t.get('/scim/v2/Schemas', { headers })
    expect(schemas.body.totalResults).toBe(3)
    const user = await t.get(`/scim/v2/Schemas/${USER}`, { headers })
    expect(user.body.attributes.find((a: { name: string }) => a.name === 'userName')).toMatchObject(
      { uniqueness: 'server', required: true, caseExact: false },
    )
    expectScimError(await t.get('/scim/v2/Bulk', { headers }), 404)
    expectScimError(await t.get('/scim/v2/Schemas/urn:nope', { headers }), 404)
  })

  test('attributes and excludedAttributes', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const created = await t.call('POST', '/scim/v2/Users', { json: barbara, headers })
    const only = await t.get(
      `/scim/v2/Users/${created.body.id}?attributes=userName,name.givenName`,
      { headers },
    )
    expect(Object.keys(only.body).sort()).toEqual(['id', 'meta', 'name', 'schemas', 'userName'])
    expect(only.body.name).toEqual({ givenName: 'Barbara' })
    const without = await t.get(
      `/scim/v2/Users?excludedAttributes=emails,${ENTERPRISE}:department`,
      { headers },
    )
    expect(without.body.Resources[0].emails).toBeUndefined()
    expect(without.body.Resources[0][ENTERPRISE]).toEqual({
      employeeNumber: '701984',
      manager: { value: '26118915-6090-4610-87e4-49d8ca9f808d', $ref: expect.any(String) },
    })
  })
})
