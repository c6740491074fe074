const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/
const BOOT = Math.floor(Math.random() * 36 ** 6)
  .toString(36)
  .padStart(6, '0')
let sequence = 0

/** The caller's X-Request-Id when it is 1–128 of [A-Za-z0-9._-], else a new `req_…` id. */
export function requestIdFor(request: Request): string {
  const given = request.headers.get('x-request-id')
  if (given !== null && REQUEST_ID.test(given)) return given
  sequence += 1
  return `req_${BOOT}${sequence.toString(36)}`
}

/** `2` for paths under /v2, else `1`: unversioned paths are v1 and stay v1. */
export function apiVersionOf(url: string): '1' | '2' {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  const next = url[start + 3]
  return url.startsWith('/v2', start) && (next === undefined || next === '/' || next === '?')
    ? '2'
    : '1'
}

const SAFE_ORIGIN =
  /^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/

/**
 * The absolute base for links and documentation_url: `--public-url` when set, else the
 * request's own scheme and host (when the Host header looks like one; it is client input).
 */
export function publicBaseUrl(request: Request, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl
  const url = request.url
  const origin = url.slice(0, url.indexOf('/', url.indexOf('//') + 2))
  return SAFE_ORIGIN.test(origin) ? origin : 'http://localhost'
}

/**
 * Gives a request its id and API version as response headers, first thing (see
 * http/pipeline.ts), so that every answer (errors from routing and parsing included) carries
 * both.
 */
export function assignRequestContext(
  request: Request,
  headers: Record<string, string | number | undefined>,
): void {
  headers['x-request-id'] = requestIdFor(request)
  headers['api-version'] = apiVersionOf(request.url)
}
