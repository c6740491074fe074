import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import { ManualClock } from '../../../src/timers'
import { expectEnvelope, makeTestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'

// Sections 11 and 17: the account's own credential changes its email only with current_password.
// A key the account's own token minted is that credential once removed (created_by_user), so it
// must not move the account's address without the step-up, nor without the old address's notice.

const START = Date.parse('2026-11-29T08:00:00Z')

describe('a key made by an admin’s own token does not move that admin’s address', () => {
  test('a stale admin token mints a key, and the key changes the admin’s own email without current_password', async () => {
    const clock = new ManualClock(START)
    await using t = await makeTestApp({ usersAccess: 'protected' }, clock)
    const { key } = await t.deps.apiKeys.create({ name: 'root', scopes: ['*'] }, SYSTEM)
    const made = await t.post(
      '/users',
      { name: 'Root', email: 'root@example.com', password: PASSWORD, role: 'admin' },
      { headers: { 'x-api-key': key } },
    )
    const login = await t.post('/login', { email: 'root@example.com', password: PASSWORD })
    const stale = { authorization: `Bearer ${login.body.access_token}` }
    clock.advance(5 * 60 * 1000 + 1)
    const path = `/users/${made.body.id}`
    expectEnvelope(
      await t.call('PATCH', path, { json: { email: 'thief@evil.example' }, headers: stale }),
      403,
      'REAUTHENTICATION_REQUIRED',
    )
    // Nor does the same stale token make itself a key to do it with: minting one is a step-up.
    const minted = await t.post('/api-keys', { name: 'mine' }, { headers: stale })
    expectEnvelope(minted, 403, 'REAUTHENTICATION_REQUIRED')
    expect(
      (await t.get('/api-keys', { headers: { 'x-api-key': key } })).body.pagination.total,
    ).toBe(1)
    expect((await t.get(path, { headers: { 'x-api-key': key } })).body.email).toBe(
      'root@example.com',
    )
    // With its current password, the admin still mints one.
    const allowed = await t.post(
      '/api-keys',
      { name: 'mine', current_password: PASSWORD },
      { headers: stale },
    )
    expect(allowed.status).toBe(201)
  })
})
