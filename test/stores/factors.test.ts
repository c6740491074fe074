import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import type { Deps } from '../../src/deps'
import type { FactorWrites, NewPasskey } from '../../src/factors/store'
import { dbQuery } from '../helpers/app'
import { twoInstances } from '../helpers/stores'

// Second factors' rows (factors/store.ts), on SQLite (npm test) and on PostgreSQL with two
// instances (npm run test:postgres): every single-use thing is used once, whichever instance
// tries it, and two at once make one winner.

const MINUTE = 60 * 1000

async function withUser() {
  const env = await twoInstances()
  const user = await env.a.users.create(
    { name: 'Ada', email: 'ada@example.com', passwordHash: null },
    SYSTEM,
  )
  return Object.assign(env, { userId: user.id })
}

const run = <T>(deps: Deps, work: (factors: FactorWrites) => Promise<T>) =>
  deps.transaction((tx) => work(tx.factors))

const passkey = (userId: number, credentialId = 'cred-1'): NewPasskey => ({
  userId,
  credentialId,
  publicKey: 'pk',
  counter: 0,
  transports: ['internal', 'hybrid'],
  name: 'Laptop',
  backedUp: true,
  createdAt: 1_700_000_000_000,
})

describe('second factors contract (two instances where the backend is shared)', () => {
  test('a pending TOTP secret is replaced by a new one; a confirmed one is not', async () => {
    await using env = await withUser()
    const { a, b, userId } = env
    expect(await run(a, (f) => f.putPendingTotp(userId, 'AAAA', 1))).toBe(true)
    expect(await run(b, (f) => f.putPendingTotp(userId, 'BBBB', 2))).toBe(true)
    expect(await run(a, (f) => f.totpOf(userId))).toEqual({
      secret: 'BBBB',
      createdAt: 2,
      confirmedAt: null,
      lastStep: 0,
    })
    expect(await run(b, (f) => f.confirmTotp(userId, 100, 3))).toBe(true)
    expect(await run(a, (f) => f.confirmTotp(userId, 101, 4))).toBe(false)
    expect(await run(a, (f) => f.putPendingTotp(userId, 'CCCC', 5))).toBe(false)
    expect((await run(b, (f) => f.totpOf(userId)))?.secret).toBe('BBBB')
  })

  test('a step is taken once, and never an earlier one; of two at once one wins', async () => {
    await using env = await withUser()
    const { a, b, userId } = env
    await run(a, (f) => f.putPendingTotp(userId, 'AAAA', 1))
    await run(a, (f) => f.confirmTotp(userId, 100, 2))
    expect(await run(a, (f) => f.takeTotpStep(userId, 100))).toBe(false)
    expect(await run(a, (f) => f.takeTotpStep(userId, 99))).toBe(false)
    const both = await Promise.all([
      run(a, (f) => f.takeTotpStep(userId, 101)),
      run(b, (f) => f.takeTotpStep(userId, 101)),
    ])
    expect(both.filter(Boolean)).toHaveLength(1)
    expect((await run(b, (f) => f.totpOf(userId)))?.lastStep).toBe(101)
  })

  test('recovery codes: each works once; a new set replaces the old', async () => {
    await using env = await withUser()
    const { a, b, userId } = env
    await run(a, (f) => f.replaceRecoveryCodes(userId, ['h1', 'h2', 'h3'], 1))
    expect(await run(b, (f) => f.recoveryCodesLeft(userId))).toBe(3)
    const both = await Promise.all([
      run(a, (f) => f.useRecoveryCode(userId, 'h1', 2)),
      run(b, (f) => f.useRecoveryCode(userId, 'h1', 2)),
    ])
    expect(both.filter(Boolean)).toHaveLength(1)
    expect(await run(a, (f) => f.useRecoveryCode(userId, 'nope', 3))).toBe(false)
    expect(await run(a, (f) => f.recoveryCodesLeft(userId))).toBe(2)
    await run(b, (f) => f.replaceRecoveryCodes(userId, ['h4'], 4))
    expect(await run(a, (f) => f.useRecoveryCode(userId, 'h2', 5))).toBe(false)
    expect(await run(a, (f) => f.useRecoveryCode(userId, 'h4', 5))).toBe(true)
  })

  test('passkeys: one row per credential id, counters move by compare-and-set, deletes are the owner’s', async () => {
    await using env = await withUser()
    const { a, b, userId } = env
    const other = await a.users.create(
      { name: 'Bob', email: 'bob@example.com', passwordHash: null },
      SYSTEM,
    )
    const row = await run(a, (f) => f.insertPasskey(passkey(userId)))
    expect(row).toEqual({
      ...passkey(userId),
      id: expect.any(Number),
      lastUsedAt: null,
      flaggedAt: null,
    })
    await expect(run(b, (f) => f.insertPasskey(passkey(other.id)))).rejects.toThrow()
    expect(await run(b, (f) => f.passkeyByCredentialId('cred-1'))).toEqual(row)
    expect(await run(b, (f) => f.recordPasskeyUse(row.id, 0, 5, 10))).toBe(true)
    expect(await run(a, (f) => f.recordPasskeyUse(row.id, 0, 6, 11))).toBe(false)
    await run(a, (f) => f.flagPasskey(row.id, 12))
    expect(await run(b, (f) => f.passkeysOf(userId))).toEqual([
      { ...row, counter: 5, lastUsedAt: 10, flaggedAt: 12 },
    ])
    expect(await run(a, (f) => f.deletePasskey(other.id, row.id))).toBe(false)
    expect(await run(b, (f) => f.deletePasskey(userId, row.id))).toBe(true)
    expect(await run(a, (f) => f.passkeysOf(userId))).toEqual([])
  })

  test('a challenge is for its purpose, spent once, and refused after its expiry', async () => {
    await using env = await withUser()
    const { a, b, userId } = env
    const now = Date.now()
    await run(a, (f) =>
      f.insertChallenge({
        hash: 'c1',
        purpose: 'passkey-register',
        userId,
        createdAt: now,
        expiresAt: now + 5 * MINUTE,
      }),
    )
    expect(await run(b, (f) => f.liveChallenge('passkey-login', 'c1', now))).toBe('unknown')
    const live = await run(b, (f) => f.liveChallenge('passkey-register', 'c1', now))
    expect(live).toEqual({ id: expect.any(Number), userId, tries: 0 })
    if (typeof live === 'string') throw new Error(live)
    expect(await run(a, (f) => f.liveChallenge('passkey-register', 'c1', now + 5 * MINUTE))).toBe(
      'expired',
    )
    await run(a, (f) => f.countChallengeTry(live.id))
    expect(await run(a, (f) => f.liveChallenge('passkey-register', 'c1', now))).toEqual({
      ...live,
      tries: 1,
    })
    const both = await Promise.all([
      run(a, (f) => f.spendChallenge(live.id, now)),
      run(b, (f) => f.spendChallenge(live.id, now)),
    ])
    expect(both.filter(Boolean)).toHaveLength(1)
    expect(await run(b, (f) => f.liveChallenge('passkey-register', 'c1', now))).toBe('used')
  })

  test('a challenge long expired is forgotten when the next is stored', async () => {
    await using env = await withUser()
    const { a } = env
    const now = Date.now()
    const stale = { purpose: 'mfa' as const, userId: null, createdAt: now - 3 * 24 * 60 * MINUTE }
    await run(a, (f) =>
      f.insertChallenge({ ...stale, hash: 'old', expiresAt: stale.createdAt + MINUTE }),
    )
    await run(a, (f) =>
      f.insertChallenge({
        hash: 'new',
        purpose: 'mfa',
        userId: null,
        createdAt: now,
        expiresAt: now + MINUTE,
      }),
    )
    expect(await run(a, (f) => f.liveChallenge('mfa', 'old', now))).toBe('unknown')
  })

  test('deleting a user deletes its factors', async () => {
    await using env = await withUser()
    const { a, userId } = env
    await run(a, (f) => f.putPendingTotp(userId, 'AAAA', 1))
    await run(a, (f) => f.replaceRecoveryCodes(userId, ['h1'], 1))
    await run(a, (f) => f.insertPasskey(passkey(userId)))
    await a.users.remove(userId, { versions: null }, SYSTEM)
    for (const table of ['totp_factors', 'recovery_codes', 'passkeys']) {
      expect(await dbQuery(a, `SELECT * FROM ${table}`)).toEqual([])
    }
  })
})
