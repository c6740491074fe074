import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp } from '../../helpers/app'
import { apiKey, PASSWORD } from '../../helpers/auth'
import { scimKey, USER } from '../scim/helpers'

describe('GET /users/{id}/provisioning', () => {
  test('says whether a user came through SCIM, with its externalId', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const admin = { 'x-api-key': await apiKey(t) }
    const scim = await scimKey(t)
    const local = await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com' },
      { headers: admin },
    )
    const provisioned = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'grace@example.com', externalId: '00u9' },
      headers: scim,
    })
    expect((await t.get(`/users/${local.body.id}/provisioning`, { headers: admin })).body).toEqual({
      user_id: local.body.id,
      provisioned: false,
      external_id: null,
    })
    expect(
      (await t.get(`/v2/users/${provisioned.body.id}/provisioning`, { headers: admin })).body,
    ).toEqual({ user_id: Number(provisioned.body.id), provisioned: true, external_id: '00u9' })
    expectEnvelope(await t.get('/users/999/provisioning', { headers: admin }), 404, 'NOT_FOUND')
    expectEnvelope(await t.get('/users/abc/provisioning', { headers: admin }), 404, 'NOT_FOUND')
  })

  test('a member reads its own and no other; without a credential it is 401', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const admin = { 'x-api-key': await apiKey(t) }
    const other = await t.post(
      '/users',
      { name: 'Bo', email: 'bo@example.com', password: PASSWORD },
      { headers: admin },
    )
    const ada = await t.post(
      '/users',
      { name: 'Ada', email: 'ada@example.com', password: PASSWORD },
      { headers: admin },
    )
    const userId = ada.body.id
    const login = await t.post('/login', { email: 'ada@example.com', password: PASSWORD })
    const asMember = { authorization: `Bearer ${login.body.access_token}` }
    expect((await t.get(`/users/${userId}/provisioning`, { headers: asMember })).status).toBe(200)
    expectEnvelope(
      await t.get(`/users/${other.body.id}/provisioning`, { headers: asMember }),
      403,
      'FORBIDDEN',
    )
    expectEnvelope(await t.get(`/users/${userId}/provisioning`), 401, 'UNAUTHORIZED')
  })
})
