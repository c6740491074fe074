import { describe, expect, test } from 'bun:test'
import {
  LOGIN_WINDOW_MS,
  type LoginAttempt,
  LoginLimiter,
  MemoryLoginFailures,
} from '../../src/auth/limiter'
import { ManualClock } from '../../src/timers'

function limiter() {
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
  return { clock, limiter: new LoginLimiter(new MemoryLoginFailures(), clock.now) }
}

const isPlace = (outcome: LoginAttempt | { retryAfter: number }): outcome is LoginAttempt =>
  !('retryAfter' in outcome)

describe('the login limiter over its failure log', () => {
  test('checks that start together are counted before any of them reads the log', async () => {
    const { limiter: l } = limiter()
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () => l.attempt('ada@example.com', '10.0.0.1')),
    )
    const places = outcomes.filter(isPlace)
    expect(places).toHaveLength(10)
    expect(outcomes.filter((o) => !isPlace(o))).toEqual(
      Array.from({ length: 40 }, () => ({ retryAfter: 1 })),
    )
    // Another address from another IP is not held up by them.
    expect(isPlace(await l.attempt('bob@example.com', '10.0.0.2'))).toBe(true)
    await Promise.all(places.map((place) => place.failed()))
    const locked = await l.attempt('ada@example.com', '10.0.0.3')
    expect(locked).toEqual({ retryAfter: LOGIN_WINDOW_MS / 1000 })
  })

  test('failures age out of the window; a success clears the address', async () => {
    const { clock, limiter: l } = limiter()
    for (let i = 0; i < 10; i++) {
      const place = await l.attempt('ada@example.com', '10.0.0.1')
      if (!isPlace(place)) throw new Error('refused too early')
      await place.failed()
      clock.advance(1000)
    }
    expect(isPlace(await l.attempt('ada@example.com', '10.0.0.1'))).toBe(false)
    // The first failure leaves the window: one place again.
    clock.advance(LOGIN_WINDOW_MS - 10_000 + 1)
    const place = await l.attempt('ada@example.com', '10.0.0.1')
    if (!isPlace(place)) throw new Error('still refused')
    await place.succeeded()
    const next = await l.attempt('ada@example.com', '10.0.0.1')
    expect(isPlace(next)).toBe(true)
  })

  test('an abandoned check frees its place without counting', async () => {
    const { limiter: l } = limiter()
    for (let i = 0; i < 20; i++) {
      const place = await l.attempt('ada@example.com', '10.0.0.1')
      if (!isPlace(place)) throw new Error('an abandoned check was counted')
      place.abandoned()
    }
  })
})
