import { noneMatch } from '../../http/conditional'
import { NO_STORE } from '../../http/credentials'
import { contentDisposition, servedInline } from '../../uploads/names'
import type { StoredFile, UploadService } from '../../uploads/service'
import { chooseRange } from './ranges'

/**
 * The file (or one range of it) from the file store; the store is read only once the answer
 * will carry bytes, so a failing store is a 503 before any header goes out. Every download is
 * nosniff and sandboxed by CSP; only passive types (servedInline) are inline, with their type;
 * everything else is an application/octet-stream attachment (the metadata keeps the declared
 * type).
 */
export async function fileResponse(
  file: StoredFile,
  store: Pick<UploadService, 'read'>,
  request: Request,
  headOnly: boolean,
): Promise<Response> {
  const etag = `"${file.sha256}"`
  const inline = servedInline(file.contentType)
  const headers: Record<string, string> = {
    // A type a browser would run or apply (script, style, HTML, SVG, XML, wasm, anything not
    // known to be passive) leaves as bytes to save: never as something roster's origin serves.
    'content-type': inline ? file.contentType : 'application/octet-stream',
    etag,
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': contentDisposition(inline ? 'inline' : 'attachment', file.filename),
    // A private file is its owner's business (section 11); a public one may be cached.
    'cache-control': file.isPublic ? 'public, no-cache' : NO_STORE,
  }
  if (!noneMatch(request.headers.get('if-none-match'), etag)) {
    return new Response(null, { status: 304, headers })
  }
  const ifRange = request.headers.get('if-range')
  const rangeHeader = request.headers.get('range')
  const range = chooseRange(rangeHeader, file.size, ifRange === null || ifRange === etag)
  if (range.kind === 'unsatisfiable') {
    return new Response(null, {
      status: 416,
      headers: { ...headers, 'content-range': `bytes */${file.size}` },
    })
  }
  if (range.kind === 'partial') {
    const length = range.end - range.start + 1
    headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`
    headers['content-length'] = String(length)
    const part = headOnly ? null : await store.read(file.id, range)
    return new Response(part, { status: 206, headers })
  }
  headers['content-length'] = String(file.size)
  if (headOnly) return new Response(null, { status: 200, headers })
  // Bun applies a Range header itself to a file body answered 200 (its parser accepts what
  // RFC 9110 does not, such as `bytes = 0-5`). A range roster declined is declined: the file
  // then goes out as a plain stream, which Bun leaves alone. Without a Range header it goes
  // out as the file (sendfile).
  const body = await store.read(file.id, null)
  const whole =
    rangeHeader === null || !(body instanceof Blob)
      ? body
      : body.stream().pipeThrough(new TransformStream())
  return new Response(whole, { status: 200, headers })
}
