import { Elysia } from 'elysia'
import { type Deps, VERSION } from './deps'
import { docsRoutes } from './docs/routes'
import { healthRoutes } from './health/routes'
import { corsPolicy } from './http/cors'
import { errorHandler } from './http/error-handler'
import { jsonResponses } from './http/json-response'
import { requestContext } from './http/request-context'
import { RouteTable } from './http/route-table'
import { type ApiVersion, usersRoutes } from './users/routes'

/** Unversioned paths are v1 and stay v1; /v1 and /v2 mount the same services. */
const MOUNTS: readonly (readonly ['' | '/v1' | '/v2', ApiVersion])[] = [
  ['', 1],
  ['/v1', 1],
  ['/v2', 2],
]

/**
 * The HTTP application: request ids and versions first, then CORS and the error envelope,
 * then the routes. Builds no server and opens no port (see server.ts). `routes` is filled with
 * the app's routes, for 405 answers, OPTIONS and log labels.
 */
export function createApp(deps: Deps, routes = new RouteTable()) {
  const app = new Elysia({ normalize: false })
    .use(requestContext)
    .use(jsonResponses)
    .use(corsPolicy(deps.config.corsOrigins, routes))
    .use(errorHandler({ publicUrl: deps.config.publicUrl, routes, log: deps.log }))
    .use(docsRoutes(VERSION))
  for (const [prefix, version] of MOUNTS) {
    app.use(healthRoutes(deps, VERSION, prefix)).use(usersRoutes(deps, prefix, version))
  }
  routes.load(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
