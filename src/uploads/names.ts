import { randomBytes } from 'node:crypto'

/** `upl_…` / `fil_…`: 16 random bytes, base64url. */
export function newId(prefix: 'upl_' | 'fil_'): string {
  return prefix + randomBytes(16).toString('base64url')
}

export const ID_FORMAT = /^(upl|fil)_[A-Za-z0-9_-]{22}$/

const MAX_FILENAME = 255
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point.
const CONTROL = /[\x00-\x1f\x7f-\x9f]/g

/**
 * The client's filename as metadata only: path parts dropped (`../../etc/passwd` is
 * `passwd`, `C:\x\y.txt` is `y.txt`), control characters and unpaired surrogates removed,
 * NFC-normalised, at most 255 characters. `file` when nothing is left.
 */
export function cleanFilename(raw: string | null | undefined): string {
  const base = (raw ?? '').split(/[/\\]/).at(-1) ?? ''
  const cleaned = base.toWellFormed().replace(CONTROL, '').normalize('NFC').trim()
  const characters = [...cleaned]
  const kept = characters.length > MAX_FILENAME ? characters.slice(-MAX_FILENAME).join('') : cleaned
  return kept === '' || kept === '.' || kept === '..' ? 'file' : kept
}

const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/

/** The declared media type, lower-cased, without parameters; octet-stream when it is not one. */
export function cleanContentType(raw: string | null | undefined): string {
  const type = (raw ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? ''
  return MEDIA_TYPE.test(type) ? type : 'application/octet-stream'
}

const ACTIVE = new Set([
  'text/html',
  'application/xhtml+xml',
  'image/svg+xml',
  'text/xml',
  'application/xml',
  'text/javascript',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'text/ecmascript',
  'application/wasm',
])

/** Types a browser would render or run: served as attachments, never inline. */
export function isActiveContent(type: string): boolean {
  return ACTIVE.has(type) || type.endsWith('+xml') || type.startsWith('text/xsl')
}

/** A Content-Disposition value with the filename in both the plain and the RFC 5987 form. */
export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

/** The filename from `Content-Disposition: attachment; filename=…` (filename* preferred). */
export function filenameFromDisposition(header: string | null): string | null {
  if (header === null) return null
  const extended = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header)
  if (extended?.[2] !== undefined) {
    try {
      return decodeURIComponent(extended[2].trim())
    } catch {
      // fall through to the plain form
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header)
  if (quoted?.[1] !== undefined) return quoted[1].replace(/\\(.)/g, '$1')
  return /filename\s*=\s*([^;\s]+)/i.exec(header)?.[1] ?? null
}
