import { describe, expect, test } from 'bun:test'
import {
  codeHashOf,
  MAX_CODE_TRIES,
  type NewToken,
  newAccountToken,
  newCode,
} from '../../src/accounts/tokens'
import { SYSTEM } from '../../src/audit/events'
import type { Deps } from '../../src/deps'
import { ManualClock } from '../../src/timers'
import { twoInstances } from '../helpers/stores'

// The single-use tokens of the mail flows, on SQLite (npm test) and on PostgreSQL with two
// instances (npm run test:postgres). See test/helpers/stores.ts.

const HOUR = 60 * 60 * 1000

async function issue(deps: Deps, token: Partial<NewToken> & { userId: number; tokenHash: string }) {
  const at = deps.clock()
  await deps.transaction((tx) =>
    tx.accountTokens.issue({
      flow: 'password-reset',
      codeHash: null,
      email: 'ada@example.com',
      createdAt: at,
      expiresAt: at + HOUR,
      ...token,
    }),
  )
}

const use = (deps: Deps, hash: string, flow: NewToken['flow'] = 'password-reset') =>
  deps.transaction((tx) => tx.accountTokens.use(flow, hash, deps.clock()))

async function withUser(clock?: ManualClock) {
  const env = await twoInstances(clock)
  const user = await env.a.users.create(
    {
      name: 'Ada',
      email: 'ada@example.com',
      passwordHash: null,
    },
    SYSTEM,
  )
  return Object.assign(env, { userId: user.id })
}

describe('account tokens contract (two instances where the backend is shared)', () => {
  test('a token works once, for its own flow only; an unknown one is unknown', async () => {
    await using env = await withUser()
    const { tokenHash } = newAccountToken()
    await issue(env.a, { userId: env.userId, tokenHash })
    expect(await use(env.b, tokenHash, 'verify-email')).toBe('unknown')
    expect(await use(env.b, tokenHash)).toEqual({
      userId: env.userId,
      flow: 'password-reset',
      email: 'ada@example.com',
      createdAt: expect.any(Number),
    })
    expect(await use(env.a, tokenHash)).toBe('used')
    expect(await use(env.a, newAccountToken().tokenHash)).toBe('unknown')
  })

  test('the same token confirmed on both instances at once: one wins, the other finds it used', async () => {
    await using env = await withUser()
    for (let round = 0; round < 5; round++) {
      const { tokenHash } = newAccountToken()
      await issue(env.a, { userId: env.userId, tokenHash })
      const outcomes = await Promise.all([use(env.a, tokenHash), use(env.b, tokenHash)])
      expect(outcomes.filter((outcome) => typeof outcome === 'object')).toHaveLength(1)
      expect(outcomes.filter((outcome) => outcome === 'used')).toHaveLength(1)
    }
  })

  test('an expired token is expired, not used; a unit that fails leaves the token unspent', async () => {
    const clock = new ManualClock(Date.parse('2026-11-24T12:00:00.000Z'))
    await using env = await withUser(clock)
    const expiring = newAccountToken().tokenHash
    await issue(env.a, { userId: env.userId, tokenHash: expiring })
    const kept = newAccountToken().tokenHash
    await issue(env.a, { userId: env.userId, tokenHash: kept, expiresAt: clock.now() + 3 * HOUR })
    const failing = env.a.transaction(async (tx) => {
      await tx.accountTokens.use('password-reset', kept, clock.now())
      throw new Error('the password change failed')
    })
    await expect(failing).rejects.toThrow('the password change failed')
    clock.advance(HOUR)
    expect(await use(env.b, expiring)).toBe('expired')
    expect(await use(env.b, kept)).toMatchObject({ userId: env.userId })
  })

  test('revoking ends the unused tokens of the flows named, and only those', async () => {
    await using env = await withUser()
    const reset = newAccountToken().tokenHash
    const verify = newAccountToken().tokenHash
    const invite = newAccountToken().tokenHash
    await issue(env.a, { userId: env.userId, tokenHash: reset })
    await issue(env.a, { userId: env.userId, tokenHash: verify, flow: 'verify-email' })
    await issue(env.a, { userId: env.userId, tokenHash: invite, flow: 'invitation' })
    await env.a.transaction((tx) =>
      tx.accountTokens.revoke(env.userId, ['password-reset', 'verify-email'], env.a.clock()),
    )
    expect(await use(env.b, reset)).toBe('used')
    expect(await use(env.b, verify, 'verify-email')).toBe('used')
    expect(await use(env.b, invite, 'invitation')).toMatchObject({ flow: 'invitation' })
  })

  test('revoking with issuedAfter ends only the tokens issued after it', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using env = await withUser(clock)
    const older = newAccountToken().tokenHash
    await issue(env.a, { userId: env.userId, tokenHash: older, flow: 'email-change-undo' })
    const cut = clock.now()
    clock.advance(1_000)
    const newer = newAccountToken().tokenHash
    await issue(env.a, { userId: env.userId, tokenHash: newer, flow: 'email-change-undo' })
    await env.a.transaction((tx) =>
      tx.accountTokens.revoke(env.userId, ['email-change-undo'], clock.now(), cut),
    )
    expect(await use(env.b, newer, 'email-change-undo')).toBe('used')
    expect(await use(env.b, older, 'email-change-undo')).toMatchObject({ userId: env.userId })
  })

  test('an address is held for the account with a live undo link to it, in any case, until the link is spent or expires', async () => {
    const clock = new ManualClock(Date.parse('2026-11-29T08:00:00Z'))
    await using env = await withUser(clock)
    const holder = (email: string) =>
      env.b.transaction((tx) => tx.accountTokens.undoHolder(email, clock.now()))
    expect(await holder('old@example.com')).toBeNull()
    const undo = newAccountToken().tokenHash
    await issue(env.a, {
      userId: env.userId,
      tokenHash: undo,
      flow: 'email-change-undo',
      email: 'Old@Example.com',
    })
    const later = newAccountToken().tokenHash
    await issue(env.a, {
      userId: env.userId,
      tokenHash: later,
      flow: 'email-change-undo',
      email: 'later@example.com',
    })
    expect(await holder('old@example.com')).toBe(env.userId)
    expect(await holder('other@example.com')).toBeNull()
    await use(env.a, undo, 'email-change-undo')
    expect(await holder('old@example.com')).toBeNull()
    expect(await holder('later@example.com')).toBe(env.userId)
    clock.advance(HOUR)
    expect(await holder('later@example.com')).toBeNull()
  })

  test(`a code takes ${MAX_CODE_TRIES} wrong tries, counted even though each is refused; then it is spent`, async () => {
    await using env = await withUser()
    const { tokenHash } = newAccountToken()
    const { code, codeHash } = newCode(tokenHash)
    await issue(env.a, { userId: env.userId, tokenHash, flow: 'magic-link', codeHash })
    const wrong = code === '000000' ? '000001' : '000000'
    const tryCode = (deps: Deps, guess: string) =>
      deps.transaction((tx) =>
        tx.accountTokens.useCode(env.userId, (hash) => codeHashOf(hash, guess), deps.clock()),
      )
    for (let i = 0; i < MAX_CODE_TRIES; i++) {
      expect(await tryCode(i % 2 === 0 ? env.a : env.b, wrong)).toBe('unknown')
    }
    expect(await tryCode(env.a, code)).toBe('expired')
  })

  test('the right code spends the link too; codes are six digits', async () => {
    await using env = await withUser()
    const { tokenHash } = newAccountToken()
    const { code, codeHash } = newCode(tokenHash)
    expect(code).toMatch(/^\d{6}$/)
    await issue(env.a, { userId: env.userId, tokenHash, flow: 'magic-link', codeHash })
    const used = await env.b.transaction((tx) =>
      tx.accountTokens.useCode(env.userId, (hash) => codeHashOf(hash, code), env.b.clock()),
    )
    expect(used).toMatchObject({ userId: env.userId, flow: 'magic-link' })
    expect(await use(env.a, tokenHash, 'magic-link')).toBe('used')
  })
})
