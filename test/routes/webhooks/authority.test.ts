// CONTRACT section 17 against the inbound webhook handlers (section 6): a signed delivery is a
// credential like any other, and deleting or changing an admin takes `*`. The sender's data is
// not the operator's: a Stripe customer's email is whatever the customer typed, so anyone who
// can make a customer with an admin's address, then delete it, reaches that admin.

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { makeTestApp, type TestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'
import { ALL_SECRETS, event, standardHeaders } from '../../helpers/webhooks'

/** Two admins (so neither is the last, which roster already keeps) and a `*` key to look. */
async function twoAdmins(t: TestApp) {
  const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
  const headers = { authorization: `Bearer ${key}` }
  const made = []
  for (const [name, email] of [
    ['Root', 'root@example.com'],
    ['Second', 'second@example.com'],
  ]) {
    const reply = await t.post(
      '/users',
      { name, email, password: PASSWORD, role: 'admin' },
      { headers },
    )
    expect(reply.status).toBe(201)
    made.push(reply.body.id as number)
  }
  return { headers, adminId: made[0] as number }
}

async function deliver(t: TestApp, type: string, object: Record<string, unknown>) {
  const body = event(type, object)
  const reply = await t.call('POST', '/webhooks', {
    body,
    headers: { 'content-type': 'application/json', ...standardHeaders(body) },
  })
  expect(reply.status).toBe(200)
  await t.deps.webhooks.worker.settled()
}

describe('A signed webhook event changes no admin', () => {
  test('customer.deleted or user.deleted naming an admin’s email leaves the admin in place', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected', webhookSecrets: ALL_SECRETS })
    t.deps.webhooks.worker.retry = { baseMs: 20, capMs: 200, maxAttempts: 1 }
    const { headers, adminId } = await twoAdmins(t)
    for (const type of ['customer.deleted', 'user.deleted']) {
      await deliver(t, type, { email: 'root@example.com' })
      const admin = await t.get(`/users/${adminId}`, { headers })
      expect({ type, status: admin.status, role: admin.body.role }).toEqual({
        type,
        status: 200,
        role: 'admin',
      })
    }
    expect((await t.post('/login', { email: 'root@example.com', password: PASSWORD })).status).toBe(
      200,
    )
  })

  test('customer.updated or user.updated naming an admin’s email does not rename the admin', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected', webhookSecrets: ALL_SECRETS })
    t.deps.webhooks.worker.retry = { baseMs: 20, capMs: 200, maxAttempts: 1 }
    const { headers, adminId } = await twoAdmins(t)
    const before = (await t.get(`/users/${adminId}`, { headers })).body
    for (const type of ['customer.updated', 'user.updated']) {
      await deliver(t, type, { email: 'root@example.com', name: 'Renamed by a sender' })
    }
    const after = (await t.get(`/users/${adminId}`, { headers })).body
    expect({ name: after.name, updated_at: after.updated_at }).toEqual({
      name: before.name,
      updated_at: before.updated_at,
    })
  })
})
