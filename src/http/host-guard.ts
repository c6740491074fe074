import type { Config } from '../config'
import { isLoopbackHost } from '../config-values'
import { AppError } from '../errors/errors'
import type { RequestStep } from './pipeline'

/**
 * While /users is open (no credential needed), only requests addressed to a loopback name or to
 * the --public-url host are answered (421 MISDIRECTED_REQUEST otherwise): a web page that points
 * a DNS name it controls at 127.0.0.1 (DNS rebinding) sends its own name as Host, and must not
 * reach an open roster through the browser. Protected mode needs no such check: there a
 * credential, which such a page does not have, is what lets a request in.
 */
export function hostGuard(config: Pick<Config, 'usersAccess' | 'publicUrl'>): RequestStep {
  if (config.usersAccess !== 'open') return () => {}
  const publicHost = config.publicUrl === null ? null : new URL(config.publicUrl).hostname
  // The origin (`http://localhost:8080/`) last found to be roster's own: nearly every request
  // has it, and then the check is one startsWith.
  let accepted = '\0'
  return function refuseForeignHost(request) {
    const url = request.url
    if (url.startsWith(accepted)) return
    // No Host header (HTTP/1.0: a balancer's health check): no browser sends such a request.
    if (url.startsWith('/')) return
    const host = hostnameOf(url)
    if (isLoopbackHost(host) || host === publicHost) {
      accepted = url.slice(0, url.indexOf('/', url.indexOf('//') + 2) + 1)
      return
    }
    throw new AppError(
      'MISDIRECTED_REQUEST',
      'roster answers only localhost and the --public-url host while /users is open',
    )
  }
}

/** The host name of a request URL (Bun builds it from the Host header, lower-cased), no port. */
export function hostnameOf(url: string): string {
  const start = url.indexOf('//') + 2
  const end = url.indexOf('/', start)
  const host = url.slice(start, end === -1 ? undefined : end)
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  const colon = host.indexOf(':')
  return colon === -1 ? host : host.slice(0, colon)
}
