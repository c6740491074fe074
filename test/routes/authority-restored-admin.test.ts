// CONTRACT section 17: a key made with an admin's session or token stops working when that
// admin is demoted, deactivated or deleted. Deactivation is how an operator answers a stolen
// laptop (section 13: sessions and tokens end at once, for good); the keys the admin made must
// not come back when the account is restored or promoted again, or a leaked key outlives the
// response to the leak.

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { PASSWORD } from '../helpers/auth'

async function adminWithKeys(t: TestApp) {
  const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
  const root = { authorization: `Bearer ${key}` }
  for (const [name, email] of [
    ['Root', 'root@example.com'],
    ['Second', 'second@example.com'],
  ]) {
    await t.post('/users', { name, email, password: PASSWORD, role: 'admin' }, { headers: root })
  }
  const admin = await t.post('/login', { email: 'second@example.com', password: PASSWORD })
  const asAdmin = { authorization: `Bearer ${admin.body.access_token}` }
  const minted = await t.post('/api-keys', { name: 'mine' }, { headers: asAdmin })
  const asKey = { authorization: `Bearer ${minted.body.key}` }
  const child = await t.post('/api-keys', { name: 'grandchild' }, { headers: asKey })
  const asChild = { authorization: `Bearer ${child.body.key}` }
  expect((await t.get('/api-keys', { headers: asChild })).status).toBe(200)
  return { root, adminId: admin.body.user.id as number, asKey, asChild }
}

describe('A key an admin made with its session, once stopped', () => {
  for (const [how, away, back] of [
    ['demoted, then promoted again', { role: 'member' }, { role: 'admin' }],
    ['deactivated, then restored', { active: false }, { active: true }],
  ] as const) {
    test(`stays stopped when the admin is ${how}`, async () => {
      await using t = await makeTestApp({ usersAccess: 'protected' })
      const { root, adminId, asKey, asChild } = await adminWithKeys(t)
      const change = (json: object) => t.call('PATCH', `/users/${adminId}`, { json, headers: root })
      expect((await change(away)).status).toBe(200)
      expectEnvelope(await t.get('/api-keys', { headers: asKey }), 401, 'UNAUTHORIZED')
      expect((await change(back)).status).toBe(200)
      expectEnvelope(await t.get('/api-keys', { headers: asKey }), 401, 'UNAUTHORIZED')
      expectEnvelope(await t.get('/api-keys', { headers: asChild }), 401, 'UNAUTHORIZED')
    })
  }
})
