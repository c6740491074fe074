import { isLoopbackHost } from '../config-values'

/**
 * Where links in mail point: --public-url, or (a laptop without one) this request's origin when
 * its host is a loopback name. Never any other Host header: an attacker asking a reset for
 * somebody else's address must not choose the host of the link that person receives.
 */
export function linkBase(request: Request, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl
  const url = new URL(request.url)
  const loopback = isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ''))
  return loopback ? url.origin : `http://localhost${url.port === '' ? '' : `:${url.port}`}`
}
