import { describe, expect, test } from 'bun:test'
import { CsvParser, CsvSyntaxError, csvField, unguardFormula } from '../../src/users/csv'

function parse(text: string, chunkSize = text.length || 1) {
  const parser = new CsvParser()
  const records = []
  for (let i = 0; i < text.length; i += chunkSize) {
    records.push(...parser.push(text.slice(i, i + chunkSize)))
  }
  records.push(...parser.end())
  return records
}

describe('CsvParser', () => {
  const cases: [string, string, unknown[]][] = [
    [
      'plain records, LF',
      'a,b\nc,d\n',
      [
        { line: 1, fields: ['a', 'b'] },
        { line: 2, fields: ['c', 'd'] },
      ],
    ],
    [
      'CRLF and a last record without a break',
      'a,b\r\nc,d',
      [
        { line: 1, fields: ['a', 'b'] },
        { line: 2, fields: ['c', 'd'] },
      ],
    ],
    [
      'lone CR',
      'a\rb\r',
      [
        { line: 1, fields: ['a'] },
        { line: 2, fields: ['b'] },
      ],
    ],
    [
      'quoted commas, quotes and line breaks; lines counted inside them',
      '"a,1","say ""hi""","x\ny"\nnext,2\n',
      [
        { line: 1, fields: ['a,1', 'say "hi"', 'x\ny'] },
        { line: 3, fields: ['next', '2'] },
      ],
    ],
    [
      'empty fields and blank lines',
      ',,\n\n\nx,,""\n',
      [
        { line: 1, fields: ['', '', ''] },
        { line: 4, fields: ['x', '', ''] },
      ],
    ],
    ['a quote inside an unquoted field stays', 'a"b,c\n', [{ line: 1, fields: ['a"b', 'c'] }]],
    ['unicode', 'Zoë,😀\n', [{ line: 1, fields: ['Zoë', '😀'] }]],
  ]
  for (const [name, text, expected] of cases) {
    test(name, () => {
      expect(parse(text)).toEqual(expected as never)
      // The same records whatever the chunk boundaries.
      for (const size of [1, 2, 3, 7]) expect(parse(text, size)).toEqual(expected as never)
    })
  }

  test('syntax errors name the line', () => {
    expect(() => parse('a,b\n"open,c\nd\n')).toThrow(
      new CsvSyntaxError('line 2: a quoted field is not closed'),
    )
    expect(() => parse('a\n"x"y,z\n')).toThrow('line 2: a character after a closing quote')
    expect(() => parse(`"${'x'.repeat(1024 * 1024 + 1)}`)).toThrow('longer than 1 MiB')
  })
})

describe('csvField', () => {
  test('quotes when it must, guards formulas, and the guard comes off again', () => {
    expect(csvField('plain')).toBe('plain')
    expect(csvField('a,b')).toBe('"a,b"')
    expect(csvField('say "hi"')).toBe('"say ""hi"""')
    expect(csvField('line\nbreak')).toBe('"line\nbreak"')
    expect(csvField(null)).toBe('')
    expect(csvField(42)).toBe('42')
    for (const formula of ['=HYPERLINK("x")', '+1', '-1', '@SUM(A1)']) {
      const field = csvField(formula)
      expect(field.replace(/^"/, '').startsWith("'")).toBe(true)
      const [record] = parse(`${field}\n`)
      expect(unguardFormula((record as { fields: string[] }).fields[0] as string)).toBe(formula)
    }
    expect(unguardFormula("'plain")).toBe("'plain")
  })
})
