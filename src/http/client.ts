import type { Server } from 'bun'

/**
 * The client's IP: the first X-Forwarded-For hop when the proxy is trusted, else the socket's
 * peer. ('unknown' in-process, where there is no socket.)
 */
export function clientIp(
  request: Request,
  server: Server<unknown> | null,
  trustProxy: boolean,
): string {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (forwarded) return forwarded
  }
  return server?.requestIP(request)?.address ?? 'unknown'
}

/** True when the request reached us over TLS, or says so through a trusted proxy. */
export function cameOverTls(request: Request, trustProxy: boolean): boolean {
  if (request.url.startsWith('https:')) return true
  return trustProxy && request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https'
}
