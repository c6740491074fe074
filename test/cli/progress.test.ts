import { describe, expect, test } from 'bun:test'
import { Progress } from '../../src/cli/progress'

function output(isTTY: boolean) {
  const writes: string[] = []
  return { writes, out: { isTTY, write: (text: string) => writes.push(text) } }
}

describe('Progress', () => {
  test('on a terminal: a bar redrawn in place, then a final line', () => {
    const { writes, out } = output(true)
    const progress = new Progress('checking', 1000, out)
    progress.advance(500, 50)
    progress.advance(500, 50)
    progress.finish()
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the redraw is an escape sequence.
    expect(writes[0]).toMatch(/^\r\x1b\[K\[#{12}-{12}\] checking: 50 rows \(50%\), [0-9,]+\/s$/)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the redraw is an escape sequence.
    expect(writes.at(-1)).toMatch(/^\r\x1b\[K\[#{24}\] checking: 100 rows \(100%\), [0-9,]+\/s\n$/)
  })

  test('in a pipe: plain lines at each tenth, no control characters', () => {
    const { writes, out } = output(false)
    const progress = new Progress('checking', 1000, out)
    for (let i = 0; i < 100; i++) progress.advance(10, 10)
    progress.finish()
    expect(writes).toHaveLength(10)
    expect(writes[0]).toMatch(/^checking: 100 rows \(10%\), [0-9,]+\/s\n$/)
    expect(writes.at(-1)).toMatch(/^checking: 1,000 rows \(100%\)/)
    expect(writes.join('')).not.toContain('\x1b')
  })

  test('without a known size: rows only', () => {
    const { writes, out } = output(false)
    const progress = new Progress('hashing passwords', null, out)
    progress.advance(0, 3)
    progress.finish()
    expect(writes.at(-1)).toMatch(/^hashing passwords: 3 rows, [0-9,]+\/s\n$/)
  })
})
