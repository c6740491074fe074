import { Elysia } from 'elysia'
import { AppError } from '../errors/errors'
import { pathOf, type RouteTable } from './route-table'

/** The catch-all route's path; the route table leaves it out. */
export const CATCH_ALL = '/*'

/** 404 for a path no route has; 405 with `Allow` for a path that has routes for other methods. */
export function notFoundOrMethodNotAllowed(request: Request, routes: RouteTable): AppError {
  const route = routes.match(pathOf(request.url))
  if (route === null) return new AppError('NOT_FOUND', 'No route matches this path')
  return new AppError(
    'METHOD_NOT_ALLOWED',
    `${request.method} is not allowed here; use ${route.methods.join(', ')}`,
    [],
    { allow: route.methods.join(', ') },
  )
}

/**
 * Refuses, before routing, a path whose percent-escapes do not decode to UTF-8 (`%ED%A0%80`, a
 * lone `%`): Elysia hands such a path parameter to the handler as null, and a handler written
 * for strings would answer 500. No resource has such a name, so the answer is 404.
 */
export function refuseUndecodablePath(request: Request): void {
  const url = request.url
  if (!url.includes('%')) return
  try {
    decodeURIComponent(pathOf(url))
  } catch {
    throw new AppError('NOT_FOUND', 'No route matches this path: it is not percent-encoded UTF-8')
  }
}

/**
 * Answers every request no other route takes, registered last. Elysia alone answers those from
 * its router (404 for a wrong method too); as a route they get 404 or 405 with `Allow`, and pass
 * through the same hooks as every other answer (the access log among them).
 */
export function unroutedRequests(routes: RouteTable) {
  return new Elysia({ name: 'unrouted' }).all(
    CATCH_ALL,
    ({ request }) => {
      throw notFoundOrMethodNotAllowed(request, routes)
    },
    { detail: { hide: true } },
  )
}
