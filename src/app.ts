import { Elysia } from 'elysia'
import { accountRoutes } from './account/routes'
import { csrfGuard } from './auth/csrf'
import { authRoutes } from './auth/routes'
import { consoleRoutes } from './console/routes'
import { type Deps, VERSION } from './deps'
import { docsRoutes } from './docs/routes'
import { healthRoutes } from './health/routes'
import type { AccessLog } from './http/access-log'
import { answerObservers } from './http/answer-observers'
import { corsPolicy } from './http/cors'
import { errorHandler } from './http/error-handler'
import { jsonResponses } from './http/json-response'
import { rateLimit } from './http/rate-limit'
import { requestContext } from './http/request-context'
import { RouteTable } from './http/route-table'
import { unroutedRequests } from './http/unrouted'
import { metricsRoutes } from './metrics/routes'
import { uploadRoutes } from './uploads/routes'
import { userExportRoutes } from './users/export-routes'
import { type ApiVersion, usersRoutes } from './users/routes'
import { registerEmailFormat } from './users/schema'
import { webhookRoutes } from './webhooks/routes'

/** Unversioned paths are v1 and stay v1; /v1 and /v2 mount the same services. */
const MOUNTS: readonly (readonly ['' | '/v1' | '/v2', ApiVersion])[] = [
  ['', 1],
  ['/v1', 1],
  ['/v2', 2],
]

/**
 * The HTTP application: request ids and versions first, then the error envelope and CORS,
 * then the routes. Builds no server and opens no port (see server.ts). `routes` is filled with
 * the app's routes, for 405 answers, OPTIONS and the route labels of logs and metrics; the
 * access log is the server's.
 */
export function createApp(
  deps: Deps,
  options: { routes?: RouteTable; accessLog?: AccessLog } = {},
) {
  registerEmailFormat()
  const routes = options.routes ?? new RouteTable()
  const observers = answerObservers({
    routes,
    metrics: deps.metrics,
    accessLog: options.accessLog,
  })
  const app = new Elysia({ normalize: false })
    .use(observers.startClock)
    .use(requestContext)
    .use(jsonResponses(observers.onAnswer))
    // Before any route: Elysia's hooks cover only the routes registered after them.
    .use(
      errorHandler({
        publicUrl: deps.config.publicUrl,
        routes,
        log: deps.log,
        onAnswer: observers.onAnswer,
        onDiskFull: () => deps.disk.refused(),
      }),
    )
    .use(corsPolicy(deps.config.corsOrigins, routes))
    .use(rateLimit(deps.config.rateLimit, deps.config.trustProxy, deps.clock))
    .use(csrfGuard(deps.config))
    .use(docsRoutes(VERSION))
    .use(consoleRoutes())
    .use(metricsRoutes(deps))
  for (const [prefix, version] of MOUNTS) {
    app.use(healthRoutes(deps, VERSION, prefix))
    app.use(userExportRoutes(deps, prefix))
    app.use(usersRoutes(deps, prefix, version))
    app.use(accountRoutes(deps, prefix))
    app.use(authRoutes(deps, prefix))
    app.use(uploadRoutes(deps, prefix))
    app.use(webhookRoutes(deps, prefix))
  }
  app.use(unroutedRequests(routes))
  routes.load(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
