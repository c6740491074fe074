import { cors } from '@elysiajs/cors'
import { Elysia } from 'elysia'
import { notFound } from './errors'
import { pathOf, type RouteTable } from './route-table'

/** Request headers a browser may send cross-origin. */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'if-match',
  'if-none-match',
  'x-api-key',
  'x-request-id',
]

/** Response headers a cross-origin script may read. */
const EXPOSED_HEADERS = [
  'api-version',
  'etag',
  'idempotent-replayed',
  'link',
  'location',
  'retry-after',
  'x-request-id',
  'x-total-count',
]

const PREFLIGHT_MAX_AGE_S = 600

/**
 * CORS with @elysiajs/cors, configured explicitly: `*` lets any origin in without
 * credentials; a list reflects only listed origins, with credentials and `Vary: Origin`; an
 * unlisted origin gets no Access-Control-Allow-Origin. (The plugin's own default reflects every
 * origin with credentials.) OPTIONS is answered here: a preflight with the route's methods,
 * any other OPTIONS with `Allow`, an unknown path with 404.
 */
export function corsPolicy(origins: '*' | readonly string[], routes: RouteTable) {
  const anyOrigin = origins === '*'
  return new Elysia({ name: 'cors-policy' })
    .use(
      cors({
        origin: anyOrigin ? '*' : [...origins],
        credentials: !anyOrigin,
        methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
        allowedHeaders: ALLOWED_HEADERS,
        exposeHeaders: EXPOSED_HEADERS,
        maxAge: PREFLIGHT_MAX_AGE_S,
        preflight: false,
      }),
    )
    .onRequest(function answerOptions({ request, set }) {
      const headers = set.headers
      // The plugin marks `*` answers `Vary: *`, which makes them uncacheable for no gain.
      if (headers.vary === '*') delete headers.vary
      if (headers['access-control-allow-origin'] === undefined) {
        delete headers['access-control-allow-credentials']
      }
      if (request.method !== 'OPTIONS') {
        // Only a preflight needs these; the plugin would send them on every answer.
        delete headers['access-control-allow-methods']
        delete headers['access-control-allow-headers']
        return
      }
      const route = routes.match(pathOf(request.url))
      if (route === null) throw notFound('No route matches this path')
      const allowed = route.methods.join(', ')
      if (request.headers.get('access-control-request-method') === null) {
        delete headers['access-control-allow-methods']
        delete headers['access-control-allow-headers']
        headers.allow = allowed
      } else {
        headers['access-control-allow-methods'] = allowed
        headers['access-control-max-age'] = String(PREFLIGHT_MAX_AGE_S)
      }
      return new Response(null, { status: 204 })
    })
}
