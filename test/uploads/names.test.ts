import { describe, expect, test } from 'bun:test'
import { chooseRange } from '../../src/routes/uploads/ranges'
import {
  cleanContentType,
  cleanFilename,
  contentDisposition,
  filenameFromDisposition,
  servedInline,
} from '../../src/uploads/names'

describe('cleanFilename', () => {
  test.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\x\\y.txt', 'y.txt'],
    ['/absolute/path/report.pdf', 'report.pdf'],
    ['evil\u0000name.txt', 'evilname.txt'],
    ['line\nbreak\r.txt', 'linebreak.txt'],
    ['tab\there', 'tabhere'],
    ['..', 'file'],
    ['', 'file'],
    [null, 'file'],
    ['  spaced.txt  ', 'spaced.txt'],
    ['caf\u0065\u0301.txt', 'café.txt'],
    ['rocket-🚀.png', 'rocket-🚀.png'],
    ['bad\ud800surrogate', 'bad\ufffdsurrogate'],
  ])('%p becomes %p', (raw, expected) => {
    expect(cleanFilename(raw)).toBe(expected)
  })

  test('a 1,000-character name keeps its last 255 characters (the extension survives)', () => {
    const name = `${'a'.repeat(996)}.txt`
    const cleaned = cleanFilename(name)
    expect([...cleaned].length).toBe(255)
    expect(cleaned.endsWith('.txt')).toBe(true)
  })
})

describe('content types', () => {
  test('declared types are normalised; nonsense becomes octet-stream', () => {
    expect(cleanContentType('Image/PNG; charset=binary')).toBe('image/png')
    expect(cleanContentType('not a type')).toBe('application/octet-stream')
    expect(cleanContentType(null)).toBe('application/octet-stream')
  })

  test.each([
    ['text/html', false],
    ['image/svg+xml', false],
    ['application/xml', false],
    ['text/javascript', false],
    ['application/atom+xml', false],
    ['multipart/x-mixed-replace', false],
    ['application/x-shockwave-flash', false],
    ['application/octet-stream', false],
    ['text/csv', false],
    ['font/woff2', false],
    ['image/png', true],
    ['image/jpeg', true],
    ['audio/mpeg', true],
    ['video/mp4', true],
    ['application/pdf', true],
    ['text/plain', true],
  ])('%s inline: %p (an allow-list of passive types)', (type, inline) => {
    expect(servedInline(type)).toBe(inline)
  })
})

describe('Content-Disposition', () => {
  test('reads filename* before filename, quoted or not', () => {
    expect(
      filenameFromDisposition('attachment; filename="a.txt"; filename*=UTF-8\'\'%E2%82%AC.txt'),
    ).toBe('€.txt')
    expect(filenameFromDisposition('attachment; filename="with \\"quote\\".txt"')).toBe(
      'with "quote".txt',
    )
    expect(filenameFromDisposition('attachment; filename=plain.bin')).toBe('plain.bin')
    expect(filenameFromDisposition('attachment')).toBeNull()
    expect(filenameFromDisposition(null)).toBeNull()
  })

  test("filename* percent-encodes ' ( ) * as RFC 8187 asks, and decodes back to the name", () => {
    const name = "it's (draft) *final*!.txt"
    const header = contentDisposition('inline', name)
    expect(header).toBe(
      "inline; filename=\"it's (draft) *final*!.txt\"; filename*=UTF-8''it%27s%20%28draft%29%20%2Afinal%2A!.txt",
    )
    const extended = header.split("filename*=UTF-8''")[1] as string
    expect(extended).toMatch(/^[A-Za-z0-9!#$&+.^_`|~%-]+$/)
    expect(filenameFromDisposition(header)).toBe(name)
  })

  test('writes an ASCII fallback and the UTF-8 form', () => {
    expect(contentDisposition('attachment', 'rapport "final" é.pdf')).toBe(
      'attachment; filename="rapport _final_ _.pdf"; filename*=UTF-8\'\'rapport%20%22final%22%20%C3%A9.pdf',
    )
  })
})

describe('chooseRange', () => {
  test.each([
    [null, 100, { kind: 'full' }],
    ['bytes=0-9', 100, { kind: 'partial', start: 0, end: 9 }],
    ['bytes=90-', 100, { kind: 'partial', start: 90, end: 99 }],
    ['bytes=-10', 100, { kind: 'partial', start: 90, end: 99 }],
    ['bytes=-1000', 100, { kind: 'partial', start: 0, end: 99 }],
    ['bytes=50-5000', 100, { kind: 'partial', start: 50, end: 99 }],
    ['bytes=99-99', 100, { kind: 'partial', start: 99, end: 99 }],
    ['bytes=100-', 100, { kind: 'unsatisfiable' }],
    ['bytes=100-200', 100, { kind: 'unsatisfiable' }],
    ['bytes=-0', 100, { kind: 'unsatisfiable' }],
    ['bytes=0-', 0, { kind: 'unsatisfiable' }],
    ['bytes=9-0', 100, { kind: 'full' }],
    ['bytes=0-1,5-6', 100, { kind: 'full' }],
    ['items=0-9', 100, { kind: 'full' }],
    ['bytes=abc', 100, { kind: 'full' }],
    ['bytes=-', 100, { kind: 'full' }],
  ])('%p of %d bytes', (header, size, expected) => {
    expect(chooseRange(header, size)).toEqual(expected as ReturnType<typeof chooseRange>)
  })

  test('an If-Range that does not hold means the whole file', () => {
    expect(chooseRange('bytes=0-9', 100, false)).toEqual({ kind: 'full' })
  })
})
