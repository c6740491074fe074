import { describe, expect, test } from 'bun:test'
import {
  LOGIN_WINDOW_MS,
  type LoginAttempt,
  type LoginFailureLog,
  LoginLimiter,
} from '../../src/auth/limiter'
import { ManualClock } from '../../src/timers'

/** A log under test, and a second handle on the same log (another instance, where shared). */
export interface MadeLog extends AsyncDisposable {
  log: LoginFailureLog
  other: LoginFailureLog
}

const isPlace = (outcome: LoginAttempt | { retryAfter: number }): outcome is LoginAttempt =>
  !('retryAfter' in outcome)

/**
 * What every LoginFailureLog promises the limiter, in memory (one process) or in a shared
 * database (where `other` is a second instance): test/stores/login-failures.test.ts.
 */
export function loginFailureLogContract(name: string, make: () => Promise<MadeLog>) {
  const limiters = (made: MadeLog) => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
    return {
      clock,
      one: new LoginLimiter(made.log, clock.now),
      two: new LoginLimiter(made.other, clock.now),
    }
  }

  describe(`${name}: the login failure log contract`, () => {
    test('checks that start together are counted before any of them is decided: 10 of 50', async () => {
      await using made = await make()
      const { one, two } = limiters(made)
      // Half on each limiter: on a shared log they are two instances with one budget.
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 === 0 ? one : two).attempt('ada@example.com', '10.0.0.1'),
        ),
      )
      const places = outcomes.filter(isPlace)
      expect(places).toHaveLength(10)
      expect(outcomes.filter((o) => !isPlace(o))).toEqual(
        Array.from({ length: 40 }, () => ({ retryAfter: 1 })),
      )
      // Another address from another IP is not held up by them.
      expect(isPlace(await one.attempt('bob@example.com', '10.0.0.2'))).toBe(true)
      await Promise.all(places.map((place) => place.failed()))
      const locked = await two.attempt('ada@example.com', '10.0.0.3')
      expect(locked).toEqual({ retryAfter: LOGIN_WINDOW_MS / 1000 })
    })

    test('failures age out of the window; a success clears the address', async () => {
      await using made = await make()
      const { clock, one, two } = limiters(made)
      for (let i = 0; i < 10; i++) {
        const place = await (i % 2 === 0 ? one : two).attempt('ada@example.com', '10.0.0.1')
        if (!isPlace(place)) throw new Error('refused too early')
        await place.failed()
        clock.advance(1000)
      }
      expect(isPlace(await one.attempt('ada@example.com', '10.0.0.1'))).toBe(false)
      // The first failure leaves the window: one place again.
      clock.advance(LOGIN_WINDOW_MS - 10_000 + 1)
      const place = await two.attempt('ada@example.com', '10.0.0.1')
      if (!isPlace(place)) throw new Error('still refused')
      await place.succeeded()
      for (let i = 0; i < 9; i++) {
        const next = await one.attempt('ada@example.com', '10.0.0.1')
        if (!isPlace(next)) throw new Error('the success did not clear the address')
        next.abandoned()
      }
    })

    test('an abandoned check frees its place without counting', async () => {
      await using made = await make()
      const { one } = limiters(made)
      for (let i = 0; i < 20; i++) {
        const place = await one.attempt('ada@example.com', '10.0.0.1')
        if (!isPlace(place)) throw new Error('an abandoned check was counted')
        place.abandoned()
        await Bun.sleep(1)
      }
    })

    test('50 failures from one IP lock every address from it, not other IPs', async () => {
      await using made = await make()
      const { one, two } = limiters(made)
      for (let i = 0; i < 50; i++) {
        const place = await (i % 2 === 0 ? one : two).attempt(`u${i}@example.com`, '10.0.0.9')
        if (!isPlace(place)) throw new Error(`refused at ${i}`)
        await place.failed()
      }
      expect(isPlace(await one.attempt('new@example.com', '10.0.0.9'))).toBe(false)
      expect(isPlace(await two.attempt('new@example.com', '10.0.0.8'))).toBe(true)
    })

    test('a check whose outcome never comes stops counting once its lease lapses', async () => {
      await using made = await make()
      const { clock, one } = limiters(made)
      for (let i = 0; i < 10; i++) {
        // Let through and never settled: as if its instance died mid-check.
        expect(isPlace(await one.attempt('ada@example.com', '10.0.0.1'))).toBe(true)
      }
      expect(await one.attempt('ada@example.com', '10.0.0.1')).toEqual({ retryAfter: 1 })
      clock.advance(61_000)
      expect(isPlace(await one.attempt('ada@example.com', '10.0.0.1'))).toBe(true)
    })
  })
}
