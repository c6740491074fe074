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

/**
 * Whether a browser may show a file of this type in the page (`inline`): only passive types
 * it displays without running anything, images other than SVG, plain text, PDF, audio and
 * video. Everything else, HTML, SVG, XML, scripts, and types nobody can vouch for
 * (`multipart/x-mixed-replace`, Flash, fonts, archives), is an attachment.
 */
export function servedInline(type: string): boolean {
  if (type === 'text/plain' || type === 'application/pdf') return true
  if (type.endsWith('+xml') || type.includes('svg')) return false
  return type.startsWith('image/') || type.startsWith('audio/') || type.startsWith('video/')
}

/**
 * A Content-Disposition value with the filename in both the plain and the RFC 8187 form. The
 * extended form percent-encodes everything but RFC 8187's attr-char (encodeURIComponent alone
 * leaves `'`, `(`, `)` and `*` as they are, which that grammar does not allow).
 */
export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_')
  const extended = encodeURIComponent(filename).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${extended}`
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
