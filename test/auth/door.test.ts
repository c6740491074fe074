// The one door (src/auth/door.ts): every way in is admitted by the same rule, decides the
// second factor the same way, and is issued the same session and token. On the real stores of
// either backend (npm test: SQLite; npm run test:postgres: PostgreSQL).

import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { STEP_UP_MS, type StepUpRule } from '../../src/auth/door'
import { hashPassword } from '../../src/auth/passwords'
import type { Principal } from '../../src/auth/principal'
import type { SignInMethod } from '../../src/auth/sessions'
import { ManualClock } from '../../src/timers'
import { makeTestApp, type TestApp } from '../helpers/app'
import { PASSWORD } from '../helpers/auth'

const METHODS: SignInMethod[] = ['password', 'magic_link', 'passkey', 'totp', 'recovery_code']

async function member(t: TestApp, email = 'ada@example.com') {
  return await t.deps.users.create({ name: 'Ada', email, passwordHash: null }, SYSTEM)
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: { errorCode?: string }) => error.errorCode ?? 'error',
  )

describe('The sign-in door', () => {
  test('admits an active account by every way in, with a session and a token that work', async () => {
    await using t = await makeTestApp()
    const ada = await member(t)
    for (const method of METHODS) {
      const entered = await t.deps.door.enter({ id: ada.id }, method, SYSTEM)
      if (entered.kind !== 'signed-in') throw new Error(`${method}: ${entered.kind}`)
      expect(entered.user).toMatchObject({ id: ada.id, email: 'ada@example.com' })
      const me = await t.get('/me', { headers: { authorization: `Bearer ${entered.accessToken}` } })
      expect({ method, status: me.status }).toEqual({ method, status: 200 })
    }
  })

  test('refuses a deactivated account by every way in, and issues nothing', async () => {
    await using t = await makeTestApp()
    const ada = await member(t)
    await t.deps.users.update(ada.id, { active: false }, { versions: null }, SYSTEM)
    for (const method of METHODS) {
      const outcome = await codeOf(t.deps.door.enter({ id: ada.id }, method, SYSTEM))
      expect({ method, outcome }).toEqual({ method, outcome: 'FORBIDDEN' })
    }
    const audit = await t.deps.audit.page(
      { targetType: 'user', targetId: String(ada.id) },
      {
        limit: 100,
        before: null,
      },
    )
    expect(audit.data.map((event) => event.action)).not.toContain('login.succeeded')
  })

  test('refuses an unverified account by every way in when the server requires verification', async () => {
    await using t = await makeTestApp({ requireVerifiedEmail: true })
    const ada = await member(t)
    for (const method of METHODS) {
      const outcome = await codeOf(t.deps.door.enter({ id: ada.id }, method, SYSTEM))
      expect({ method, outcome }).toEqual({ method, outcome: 'EMAIL_NOT_VERIFIED' })
    }
  })

  test('a password or a link of an account with TOTP earns an mfa_token; a passkey or a code finishes', async () => {
    await using t = await makeTestApp()
    const ada = await member(t)
    for (const method of ['password', 'magic_link'] as const) {
      const entered = await t.deps.door.enter({ id: ada.id, secondFactor: true }, method, SYSTEM)
      expect(entered.kind).toBe('second-step')
    }
    for (const method of ['passkey', 'totp', 'recovery_code'] as const) {
      const entered = await t.deps.door.enter({ id: ada.id, secondFactor: true }, method, SYSTEM)
      expect(entered.kind).toBe('signed-in')
    }
  })

  test('refuses an account that is gone', async () => {
    await using t = await makeTestApp()
    expect(await codeOf(t.deps.door.enter({ id: 999 }, 'passkey', SYSTEM))).toBe(
      'INVALID_CREDENTIALS',
    )
  })
})

describe('The step-up at the door', () => {
  const origin = () => ({ ip: '127.0.0.1', requestId: null })

  /** A signed-in account (with a password or not) and a stepUp bound to its fresh token. */
  async function signedInAccount(t: TestApp, withPassword: boolean) {
    const passwordHash = withPassword ? await hashPassword(PASSWORD) : null
    const user = await t.deps.users.create(
      { name: 'Ada', email: 'ada@example.com', passwordHash },
      SYSTEM,
    )
    const issued = await t.deps.credentials.issue(user.id, SYSTEM, 'password')
    const principal: Principal = {
      kind: 'user',
      userId: user.id,
      role: 'member',
      scheme: 'bearer',
      secret: issued.accessToken,
    }
    const account = { email: user.email, passwordHash }
    return (rule: StepUpRule, currentPassword?: string) =>
      codeOf(t.deps.door.requireStepUp(principal, currentPassword, origin, rule, account))
  }

  test('for factors: a sign-in within 5 minutes, or the current password', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const stepUp = await signedInAccount(t, true)
    expect(await stepUp('recent-or-password')).toBe('ok')
    clock.advance(STEP_UP_MS + 1)
    expect(await stepUp('recent-or-password')).toBe('REAUTHENTICATION_REQUIRED')
    expect(await stepUp('recent-or-password', 'a wrong guess')).toBe('REAUTHENTICATION_REQUIRED')
    expect(await stepUp('recent-or-password', PASSWORD)).toBe('ok')
  })

  test('for the password or email: the current password whenever the account has one', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const stepUp = await signedInAccount(t, true)
    expect(await stepUp('password-first')).toBe('REAUTHENTICATION_REQUIRED')
    expect(await stepUp('password-first', 'a wrong guess')).toBe('REAUTHENTICATION_REQUIRED')
    expect(await stepUp('password-first', PASSWORD)).toBe('ok')
  })

  test('for the password or email of an account without one: a sign-in within 5 minutes', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T12:00:00Z'))
    await using t = await makeTestApp({}, clock)
    const stepUp = await signedInAccount(t, false)
    expect(await stepUp('password-first')).toBe('ok')
    clock.advance(STEP_UP_MS + 1)
    expect(await stepUp('password-first')).toBe('REAUTHENTICATION_REQUIRED')
  })
})
