import type { Config } from '../../config'
import { AppError } from '../../errors/errors'
import { cameOverTls } from '../../http/client'
import type { RequestStep } from '../../http/pipeline'
import { pathOf } from '../../http/route-table'
import { hasSessionCookie } from './cookies'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
/** What an HTML form (or a no-preflight fetch) can send without the site's consent. */
const FORM_TYPES = new Set([
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
])
const FORM_TARGETS = /^(?:\/v[12])?\/(?:login|upload)\/?$/

/**
 * CSRF refusal (403) for the requests a hostile page could make a browser send: any unsafe
 * request that carries the session cookie, and any form post to /login or /upload. They are
 * let through when they come from the service's own origin or a --cors-origins one (by
 * Origin, else by Sec-Fetch-Site), and when they carry neither header (curl, servers: no
 * browser, so no one else's cookies).
 */
export function csrfGuard(config: Config): RequestStep {
  const listed = new Set(config.corsOrigins === '*' ? [] : config.corsOrigins)
  return function refuseCrossSite(request) {
    if (SAFE_METHODS.has(request.method)) return
    const headers = request.headers
    const withSession = hasSessionCookie(headers.get('cookie'))
    if (!withSession && !isFormPostToLoginOrUpload(request)) return
    const origin = headers.get('origin')
    if (origin !== null) {
      if (origin === ownOrigin(request, config) || listed.has(origin)) return
      throw forbidden()
    }
    if (headers.get('sec-fetch-site') === 'cross-site') throw forbidden()
  }
}

function isFormPostToLoginOrUpload(request: Request): boolean {
  const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase()
  return type !== undefined && FORM_TYPES.has(type) && FORM_TARGETS.test(pathOf(request.url))
}

/** --public-url's origin, else the request's own scheme (as the proxy says, if trusted) and host. */
function ownOrigin(request: Request, config: Config): string {
  if (config.publicUrl !== null) return new URL(config.publicUrl).origin
  const host = new URL(request.url).host
  return `${cameOverTls(request, config.trustProxy) ? 'https' : 'http'}://${host}`
}

function forbidden(): AppError {
  return new AppError(
    'FORBIDDEN',
    'Cross-site request refused: it carries a session cookie or is a form post, and comes from another origin',
  )
}
