import { describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../../helpers/app'
import { eventCount, expectScimError, GROUP, PATCH, scimKey, USER } from './helpers'

async function people(t: TestApp, headers: Record<string, string>, count: number) {
  const ids: string[] = []
  for (let i = 1; i <= count; i++) {
    const reply = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: `person${i}@example.com`, displayName: `Person ${i}` },
      headers,
    })
    ids.push(reply.body.id)
  }
  return ids
}

describe('SCIM Groups', () => {
  test('create with members: 201, display names, the same group in /groups and in the users', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const [a, b] = await people(t, headers, 2)
    const created = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Engineering', members: [{ value: a }, { value: b }] },
      headers,
    })
    expect(created.status).toBe(201)
    const id = created.body.id
    expect(created.headers.get('location')).toBe(`http://localhost/scim/v2/Groups/${id}`)
    expect(created.body).toMatchObject({
      schemas: [GROUP],
      displayName: 'Engineering',
      members: [
        {
          value: a,
          display: 'Person 1',
          type: 'User',
          $ref: `http://localhost/scim/v2/Users/${a}`,
        },
        { value: b, display: 'Person 2', type: 'User' },
      ],
      meta: { resourceType: 'Group', version: created.headers.get('etag') },
    })
    expect((await t.get(`/groups/${id}`)).body).toMatchObject({
      name: 'Engineering',
      members: [Number(a), Number(b)],
    })
    const user = await t.get(`/scim/v2/Users/${a}`, { headers })
    expect(user.body.groups).toEqual([
      { value: id, $ref: `http://localhost/scim/v2/Groups/${id}`, type: 'direct' },
    ])
  })

  test('PATCH members: add, remove by value path, remove all, replace; displayName', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const [a, b, c] = await people(t, headers, 3)
    const created = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Sales', members: [{ value: a }] },
      headers,
    })
    const id = created.body.id
    const patch = async (...Operations: object[]) => {
      const reply = await t.call('PATCH', `/scim/v2/Groups/${id}`, {
        json: { schemas: [PATCH], Operations },
        headers,
      })
      expect(reply.status).toBe(200)
      return reply.body.members?.map((member: { value: string }) => member.value) ?? []
    }
    expect(
      await patch({ op: 'add', path: 'members', value: [{ value: b }, { value: c }] }),
    ).toEqual([a, b, c])
    expect(await patch({ op: 'remove', path: `members[value eq "${b}"]` })).toEqual([a, c])
    expect(await patch({ op: 'Remove', path: 'members' })).toEqual([])
    expect(await patch({ op: 'replace', path: 'members', value: [{ value: c }] })).toEqual([c])
    // Okta renames a pushed group with its id in the value.
    expect(await patch({ op: 'replace', value: { id, displayName: 'Sales EMEA' } })).toEqual([c])
    expect((await t.get(`/groups/${id}`)).body).toMatchObject({
      name: 'Sales EMEA',
      members: [Number(c)],
    })
    expectScimError(
      await t.call('PATCH', `/scim/v2/Groups/${id}`, {
        json: {
          schemas: [PATCH],
          Operations: [{ op: 'add', path: 'members', value: [{ value: '999999' }] }],
        },
        headers,
      }),
      400,
      'invalidValue',
    )
  })

  test('filters, excludedAttributes=members, paging and sort', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const [a] = await people(t, headers, 1)
    for (const name of ['Alpha', 'Beta', 'Gamma']) {
      await t.call('POST', '/scim/v2/Groups', {
        json: {
          schemas: [GROUP],
          displayName: name,
          members: name === 'Beta' ? [{ value: a }] : [],
        },
        headers,
      })
    }
    const names = async (query: string) => {
      const reply = await t.get(`/scim/v2/Groups?${query}`, { headers })
      expect({ query, status: reply.status }).toEqual({ query, status: 200 })
      return reply.body.Resources.map((group: { displayName: string }) => group.displayName)
    }
    expect(await names(`filter=${encodeURIComponent('displayName eq "beta"')}`)).toEqual(['Beta'])
    expect(await names(`filter=${encodeURIComponent(`members[value eq "${a}"]`)}`)).toEqual([
      'Beta',
    ])
    expect(
      await names(`filter=${encodeURIComponent(`members.value eq "${a}" or displayName sw "G"`)}`),
    ).toEqual(['Beta', 'Gamma'])
    expect(await names('sortBy=displayName&sortOrder=descending&count=2')).toEqual([
      'Gamma',
      'Beta',
    ])
    const lean = await t.get('/scim/v2/Groups?excludedAttributes=members', { headers })
    expect(lean.body.Resources.every((group: object) => !('members' in group))).toBe(true)
    expect(lean.body.totalResults).toBe(3)
    expectScimError(
      await t.get(`/scim/v2/Groups?filter=${encodeURIComponent('emails[type eq "work"]')}`, {
        headers,
      }),
      400,
      'invalidFilter',
    )
  })

  test('a PATCH that changes nothing (a member added again) writes nothing; a stale If-Match is still 412', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const [a, b] = await people(t, headers, 2)
    const created = await t.call('POST', '/scim/v2/Groups', {
      json: {
        schemas: [GROUP],
        displayName: 'Sales',
        externalId: 'okta-1',
        members: [{ value: a }],
      },
      headers,
    })
    const id = created.body.id
    const eventsOf = () => eventCount(t, 'group', id)
    const eventsBefore = await eventsOf()
    const patch = (Operations: object[], extra: Record<string, string> = {}) =>
      t.call('PATCH', `/scim/v2/Groups/${id}`, {
        json: { schemas: [PATCH], Operations },
        headers: { ...headers, ...extra },
      })
    // Okta pushes the members it knows on each run; Entra replaces displayName with itself.
    const again = await patch([
      { op: 'add', path: 'members', value: [{ value: a }] },
      { op: 'replace', path: 'displayName', value: 'Sales' },
    ])
    expect(again.status).toBe(200)
    expect(again.body.meta.version).toBe(created.body.meta.version)
    expect(again.headers.get('etag')).toBe(created.headers.get('etag'))
    expect(await eventsOf()).toBe(eventsBefore)
    expectScimError(
      await patch([{ op: 'add', path: 'members', value: [{ value: a }] }], {
        'if-match': 'W/"999"',
      }),
      412,
    )
    const grown = await patch([{ op: 'add', path: 'members', value: [{ value: b }] }])
    expect(grown.body.meta.version).not.toBe(created.body.meta.version)
    expect(grown.body.members.map((m: { value: string }) => m.value)).toEqual([a, b])
  })

  test('externalId is kept, shown, found and sorted by, replaced by PATCH, forgotten by a PUT without it', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    // Entra sends the group's object id as externalId; Okta its group id.
    const created = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Everyone', externalId: '00gAbC1' },
      headers,
    })
    expect(created.status).toBe(201)
    expect(created.body.externalId).toBe('00gAbC1')
    const id = created.body.id
    await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'No provider id' },
      headers,
    })
    expect((await t.get(`/scim/v2/Groups/${id}`, { headers })).body.externalId).toBe('00gAbC1')
    const found = async (filter: string) =>
      (
        await t.get(`/scim/v2/Groups?filter=${encodeURIComponent(filter)}`, { headers })
      ).body.Resources.map((group: { id: string }) => group.id)
    expect(await found('externalId eq "00gAbC1"')).toEqual([id])
    // Case-exact, as the Schemas document says.
    expect(await found('externalId eq "00GABC1"')).toEqual([])
    expect(await found('externalId pr')).toEqual([id])
    const sorted = await t.get('/scim/v2/Groups?sortBy=externalId', { headers })
    expect(sorted.status).toBe(200)
    expect(
      sorted.body.Resources.map((group: { displayName: string }) => group.displayName),
    ).toEqual(['Everyone', 'No provider id'])

    const patched = await t.call('PATCH', `/scim/v2/Groups/${id}`, {
      json: {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'externalId', value: '00gXyZ2' }],
      },
      headers,
    })
    expect(patched.status).toBe(200)
    expect(patched.body.externalId).toBe('00gXyZ2')
    expect(patched.headers.get('etag')).not.toBe(created.headers.get('etag'))

    const replaced = await t.call('PUT', `/scim/v2/Groups/${id}`, {
      json: { schemas: [GROUP], displayName: 'Everyone' },
      headers,
    })
    expect(replaced.status).toBe(200)
    expect('externalId' in replaced.body).toBe(false)
    expect('externalId' in (await t.get(`/scim/v2/Groups/${id}`, { headers })).body).toBe(false)
    expect(await found('externalId pr')).toEqual([])

    // Not text: refused, nothing stored.
    const wrong = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Numbers', externalId: 42 },
      headers,
    })
    expectScimError(wrong, 400, 'invalidValue')
    expect(await found('displayName eq "Numbers"')).toEqual([])
    const schema = await t.get(`/scim/v2/Schemas/${GROUP}`, { headers })
    expect(
      schema.body.attributes.find((a: { name: string }) => a.name === 'externalId'),
    ).toMatchObject({ type: 'string', caseExact: true, mutability: 'readWrite' })
    // The group's own API is unchanged: externalId is SCIM's.
    expect(Object.keys((await t.get(`/groups/${id}`)).body)).not.toContain('externalId')
  })

  test('a taken name is 409 uniqueness; PUT replaces; a stale If-Match is 412; DELETE 204 then 404', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const [a, b] = await people(t, headers, 2)
    const one = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'Ops', members: [{ value: a }] },
      headers,
    })
    expectScimError(
      await t.call('POST', '/scim/v2/Groups', {
        json: { schemas: [GROUP], displayName: 'OPS' },
        headers,
      }),
      409,
      'uniqueness',
    )
    expectScimError(
      await t.call('POST', '/scim/v2/Groups', { json: { schemas: [GROUP] }, headers }),
      400,
      'invalidValue',
    )
    expectScimError(
      await t.call('POST', '/scim/v2/Groups', { json: { displayName: 'X' }, headers }),
      400,
      'invalidSyntax',
    )
    const id = one.body.id
    const replaced = await t.call('PUT', `/scim/v2/Groups/${id}`, {
      json: { schemas: [GROUP], displayName: 'Operations', members: [{ value: b }] },
      headers: { ...headers, 'if-match': one.body.meta.version },
    })
    expect(replaced.body).toMatchObject({ displayName: 'Operations', members: [{ value: b }] })
    expectScimError(
      await t.call('PUT', `/scim/v2/Groups/${id}`, {
        json: { schemas: [GROUP], displayName: 'Again' },
        headers: { ...headers, 'if-match': one.body.meta.version },
      }),
      412,
    )
    expect((await t.call('DELETE', `/scim/v2/Groups/${id}`, { headers })).status).toBe(204)
    expectScimError(await t.call('DELETE', `/scim/v2/Groups/${id}`, { headers }), 404)
    expect((await t.get(`/scim/v2/Users/${a}`, { headers })).status).toBe(200)
  })
})
