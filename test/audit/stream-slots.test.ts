import { describe, expect, test } from 'bun:test'
import { type StreamSlot, StreamSlots } from '../../src/audit/stream-slots'

const LIFETIME_MS = 600_000

function slots(perHolder: number, total: number) {
  const clock = { now: 1_000_000 }
  return { clock, slots: new StreamSlots({ perHolder, total }, LIFETIME_MS, () => clock.now) }
}

const given = (taken: ReturnType<StreamSlots['take']>): StreamSlot => {
  if (!('release' in taken)) throw new Error(`refused: ${JSON.stringify(taken)}`)
  return taken
}

describe('StreamSlots', () => {
  test('a holder gets perHolder slots; the next is refused until the oldest would end', () => {
    const { clock, slots: caps } = slots(2, 10)
    given(caps.take('key:1'))
    clock.now += 90_500
    given(caps.take('key:1'))
    expect(caps.take('key:1')).toEqual({ over: 'holder', retryAfterS: 510 })
    expect(caps.count('key:1')).toBe(2)
    given(caps.take('key:2'))
    expect(caps.count()).toBe(3)
  })

  test('all holders together get total slots; a release frees one at once, and twice frees one', () => {
    const { clock, slots: caps } = slots(5, 2)
    const first = given(caps.take('key:1'))
    given(caps.take('user:7'))
    clock.now += 60_000
    expect(caps.take('key:3')).toEqual({ over: 'total', retryAfterS: 540 })
    first.release()
    first.release()
    expect(caps.count()).toBe(1)
    expect(caps.count('key:1')).toBe(0)
    given(caps.take('key:3'))
    expect(caps.take('key:1')).toMatchObject({ over: 'total' })
  })

  test('Retry-After is at least a second, even past a stream’s lifetime', () => {
    const { clock, slots: caps } = slots(1, 1)
    given(caps.take('key:1'))
    clock.now += LIFETIME_MS + 5000
    expect(caps.take('key:1')).toEqual({ over: 'holder', retryAfterS: 1 })
  })
})
