import { cors } from '@elysiajs/cors'
import { Elysia } from 'elysia'
import { notFound } from '../errors/errors'
import { pathOf, type RouteTable } from './route-table'
import { CATCH_ALL } from './unrouted'

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

const ALLOWED_HEADERS_TEXT = ALLOWED_HEADERS.join(', ')

/** Response headers a cross-origin script may read. */
const EXPOSED_HEADERS = [
  'api-version',
  'etag',
  'idempotent-replayed',
  'link',
  'location',
  'ratelimit-limit',
  'ratelimit-policy',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'x-request-id',
  'x-total-count',
]

const PREFLIGHT_MAX_AGE_S = 600

/**
 * Run by the request pipeline after the CORS plugin's own hook: the plugin marks `*` answers
 * `Vary: *`, which makes them uncacheable for no gain, and sends allow-credentials even when
 * it allowed no origin.
 */
export function tidyCorsHeaders(headers: Record<string, string | number | undefined>): void {
  if (headers.vary === '*') delete headers.vary
  if (headers['access-control-allow-origin'] === undefined) {
    delete headers['access-control-allow-credentials']
  }
}

/**
 * CORS with @elysiajs/cors, configured explicitly: `*` lets any origin in without
 * credentials; a list reflects only listed origins, with credentials and `Vary: Origin`; an
 * unlisted origin gets no Access-Control-Allow-Origin. (The plugin's own default reflects every
 * origin with credentials.) Registered first: its hook sets the headers on every answer.
 */
export function corsPolicy(origins: '*' | readonly string[]) {
  const anyOrigin = origins === '*'
  return new Elysia({ name: 'cors-policy' }).use(
    cors({
      origin: anyOrigin ? '*' : [...origins],
      credentials: !anyOrigin,
      // The preflight-only headers are set below, on preflights only. (The plugin skips
      // allowedHeaders when it is false; its types only list true, a string or a list, and
      // an empty list would send an empty header on every answer.)
      methods: [],
      allowedHeaders: false as unknown as string[],
      exposeHeaders: EXPOSED_HEADERS,
      maxAge: PREFLIGHT_MAX_AGE_S,
      preflight: false,
    }),
  )
}

/**
 * OPTIONS, answered by a route (so it is logged like any other answer): a preflight with the
 * route's methods, any other OPTIONS with `Allow`, an unknown path with 404.
 */
export function optionsRoutes(routes: RouteTable) {
  return new Elysia({ name: 'options' }).options(
    CATCH_ALL,
    function answerOptions({ request, set }) {
      const route = routes.match(pathOf(request.url))
      if (route === null) throw notFound('No route matches this path')
      const allowed = route.methods.join(', ')
      if (request.headers.get('access-control-request-method') === null) {
        set.headers.allow = allowed
      } else {
        set.headers['access-control-allow-methods'] = allowed
        set.headers['access-control-allow-headers'] = ALLOWED_HEADERS_TEXT
        set.headers['access-control-max-age'] = String(PREFLIGHT_MAX_AGE_S)
      }
      set.status = 204
      return ''
    },
    { detail: { hide: true } },
  )
}
