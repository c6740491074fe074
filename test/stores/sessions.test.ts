import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import {
  ACCESS_TOKEN_TTL_MS,
  SESSION_RENEW_INTERVAL_MS,
  SESSION_TTL_MS,
} from '../../src/auth/sessions'
import { ManualClock } from '../../src/timers'
import { dbQuery } from '../helpers/app'
import { twoInstances } from '../helpers/stores'

// The credential store's contract (sessions and access tokens), on SQLite (npm test) and on
// PostgreSQL with two instances (npm run test:postgres). See test/helpers/stores.ts.

const START = Date.parse('2026-11-23T12:00:00Z')

async function withUser(clock = new ManualClock(START)) {
  const env = await twoInstances(clock)
  const user = await env.a.users.create(
    {
      name: 'Ada',
      email: 'ada@example.com',
      passwordHash: null,
    },
    SYSTEM,
  )
  return Object.assign(env, { user, clock })
}

const rowCount = async (env: Awaited<ReturnType<typeof withUser>>, table: string) =>
  Number((await dbQuery<{ n: number }>(env.a, `SELECT count(*) AS n FROM ${table}`))[0]?.n)

describe('credential store contract (two instances where the backend is shared)', () => {
  test('a login issued on one instance is good on the other, and names its user', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    expect(issued.sessionToken).toMatch(/^rs_[A-Za-z0-9_-]{43}$/)
    expect(issued.accessToken).toMatch(/^rt_[A-Za-z0-9_-]{43}$/)
    const session = await env.b.credentials.useSession(issued.sessionToken)
    expect(session).toMatchObject({ user: { id: env.user.id, email: 'ada@example.com' } })
    expect((await env.b.credentials.useAccessToken(issued.accessToken))?.id).toBe(env.user.id)
    // Only hashes are stored.
    const stored = JSON.stringify(await dbQuery(env.a, 'SELECT * FROM sessions'))
    expect(stored).not.toContain(issued.sessionToken)
  })

  test('unknown, malformed and other-kind secrets are refused without touching anything', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    for (const token of [
      '',
      'rs_short',
      `${issued.sessionToken}x`,
      issued.accessToken,
      'rs_\u0000',
    ]) {
      expect(await env.b.credentials.useSession(token)).toBeNull()
    }
    expect(await env.b.credentials.useAccessToken(issued.sessionToken)).toBeNull()
    expect(await rowCount(env, 'sessions')).toBe(1)
  })

  test('a revocation on one instance is refused on the other at once', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    await env.a.credentials.revokeSession(issued.sessionToken, SYSTEM)
    await env.a.credentials.revokeAccessToken(issued.accessToken, SYSTEM)
    expect(await env.b.credentials.useSession(issued.sessionToken)).toBeNull()
    expect(await env.b.credentials.useAccessToken(issued.accessToken)).toBeNull()
  })

  test('expiry: an access token lasts an hour, an unused session seven days', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    env.clock.advance(ACCESS_TOKEN_TTL_MS - 1)
    expect(await env.b.credentials.useAccessToken(issued.accessToken)).not.toBeNull()
    env.clock.advance(1)
    expect(await env.b.credentials.useAccessToken(issued.accessToken)).toBeNull()
    // Only the token was used: the session's seven days run from the login.
    env.clock.advance(SESSION_TTL_MS - ACCESS_TOKEN_TTL_MS - 1)
    expect((await env.b.credentials.useSession(issued.sessionToken))?.user.id).toBe(env.user.id)
  })

  test('renewal: a use over an hour after the last extension moves the expiry; one sooner does not', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    env.clock.advance(SESSION_RENEW_INTERVAL_MS)
    expect((await env.b.credentials.useSession(issued.sessionToken))?.renewed).toBe(false)
    env.clock.advance(1)
    expect((await env.b.credentials.useSession(issued.sessionToken))?.renewed).toBe(true)
    // Seven days from the renewal, not from the login.
    env.clock.advance(SESSION_TTL_MS - 1)
    expect((await env.a.credentials.useSession(issued.sessionToken))?.user.id).toBe(env.user.id)
  })

  test('two instances renewing one session at once: both answer it valid, the expiry never moves back', async () => {
    await using env = await withUser()
    const issued = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    for (let round = 1; round <= 5; round++) {
      env.clock.advance(SESSION_RENEW_INTERVAL_MS + 1)
      const uses = await Promise.all([
        env.a.credentials.useSession(issued.sessionToken),
        env.b.credentials.useSession(issued.sessionToken),
      ])
      expect(uses.map((use) => use?.user.id)).toEqual([env.user.id, env.user.id])
      const [row] = await dbQuery<{ expires_at: number }>(env.a, 'SELECT expires_at FROM sessions')
      expect(Number(row?.expires_at)).toBe(env.clock.now() + SESSION_TTL_MS)
    }
  })

  test('purgeExpired deletes what expired and keeps the rest, on every instance at once', async () => {
    await using env = await withUser()
    const old = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    env.clock.advance(ACCESS_TOKEN_TTL_MS)
    const fresh = await env.a.credentials.issue(env.user.id, SYSTEM, 'password')
    await Promise.all([env.a.credentials.purgeExpired(), env.b.credentials.purgeExpired()])
    expect(await rowCount(env, 'access_tokens')).toBe(1)
    expect(await rowCount(env, 'sessions')).toBe(2)
    expect(await env.b.credentials.useAccessToken(fresh.accessToken)).not.toBeNull()
    expect(await env.b.credentials.useAccessToken(old.accessToken)).toBeNull()
  })
})
