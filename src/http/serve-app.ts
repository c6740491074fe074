import type { Serve, Server } from 'bun'
import type { AnyElysia } from 'elysia'
import { createBunRouteHandler } from 'elysia/adapter/bun/compose'

type RouteHandler = (request: Request) => Response | Promise<Response>

/** A route as Elysia keeps it (`app.router.history`, which Elysia does not type as public). */
interface HistoryRoute {
  method: string
  path: string
  handler: unknown
}

/** The methods Bun's router takes per path; the catch-all routes (`/*`) stay with `fetch`. */
const NATIVE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE', 'PATCH', 'POST', 'PUT'])

/**
 * Serves the app with every route in Bun's own router, as Elysia's `listen` does, but once:
 * `listen` compiles the app, maps the routes and starts the server, then, a tick later,
 * compiles and maps everything again, reloads the server and asks for a collection. On
 * roster's 165 routes that second pass was about a tenth of start-up (spawn to first answer).
 * Each route's handler is composed on its first request, as under `listen`. What falls
 * through (unknown paths and methods, `/*`) reaches the app's compiled `fetch`.
 */
export function serveApp(
  app: AnyElysia,
  options: Partial<Serve.Options<unknown>>,
): Server<unknown> {
  app.compile()
  const routes: Record<string, Record<string, RouteHandler>> = {}
  for (const route of (app as unknown as { router: { history: HistoryRoute[] } }).router.history) {
    if (!servedNatively(route)) continue
    const path = encodeURI(route.path)
    routes[path] ??= {}
    routes[path][route.method] ??= composedOnFirstUse(app, route)
  }
  const server = Bun.serve({ ...options, routes, fetch: app.fetch } as Serve.Options<unknown>)
  // The context's `server` (the client's address for the rate limit) is read from here.
  ;(app as unknown as { server: Server<unknown> }).server = server
  return server
}

function servedNatively(route: HistoryRoute): boolean {
  return (
    typeof route.handler === 'function' &&
    NATIVE_METHODS.has(route.method) &&
    !route.path.endsWith('*')
  )
}

function composedOnFirstUse(app: AnyElysia, route: HistoryRoute): RouteHandler {
  let composed: RouteHandler | undefined
  return (request) => {
    composed ??= createBunRouteHandler(app, route as never) as RouteHandler
    return composed(request)
  }
}
