import type { Server } from 'bun'
import { createApp } from './app'
import type { Config } from './config'
import { type Deps, makeDeps } from './deps'
import { errorResponse } from './http/error-handler'
import { AppError } from './http/errors'
import { publicBaseUrl, requestIdFor } from './http/request-context'
import { pathOf, RouteTable } from './http/route-table'
import { LineWriter, type Logger } from './log'

/** Bun refuses larger bodies itself with a bare 413; roster's own limits sit below this. */
const MAX_REQUEST_BODY = 4 * 1024 ** 3
/** How long shutdown waits for in-flight requests before closing their connections. */
export const SHUTDOWN_GRACE_MS = 10_000

export interface RunningServer {
  readonly url: string
  readonly port: number
  readonly deps: Deps
  /** Stops accepting, lets in-flight requests finish (10 s cap), flushes logs, closes the db. */
  stop(): Promise<void>
}

/** The server could not start: the port is taken or the address cannot be bound. */
export class ServerStartError extends Error {}

/** Opens the data dir, migrates, and listens. Throws DataDirError, DatabaseOpenError, ServerStartError. */
export function startServer(config: Config, log: Logger): RunningServer {
  const deps = makeDeps(config, log)
  const routes = new RouteTable()
  const app = createApp(deps, routes)
  const accessLog = new LineWriter(config.logFile)
  let inFlight = 0

  const fetch = async (request: Request): Promise<Response> => {
    const started = performance.now()
    inFlight += 1
    let response: Response
    try {
      response = await app.fetch(request)
    } catch (error) {
      response = lastResort(error, request, config, log)
    } finally {
      inFlight -= 1
    }
    accessLog.write(accessLine(request, response, started, routes))
    return response
  }

  let server: Server<unknown>
  try {
    server = Bun.serve({
      hostname: config.host,
      port: config.port,
      reusePort: false,
      development: false,
      idleTimeout: 30,
      maxRequestBodySize: MAX_REQUEST_BODY,
      fetch,
    })
  } catch (error) {
    deps.db.$client.close()
    throw new ServerStartError(describeListenFailure(config, error))
  }
  app.server = server

  let stopping: Promise<void> | null = null
  const stop = () => {
    stopping ??= (async () => {
      const closed = server.stop(false)
      const deadline = Date.now() + SHUTDOWN_GRACE_MS
      while (inFlight > 0 && Date.now() < deadline) await Bun.sleep(5)
      await Promise.race([closed, Bun.sleep(Math.max(0, deadline - Date.now()))])
      await server.stop(true)
      await accessLog.close()
      deps.db.$client.close()
    })()
    return stopping
  }

  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return { url: `http://${host}:${server.port}`, port: server.port ?? config.port, deps, stop }
}

function accessLine(request: Request, response: Response, started: number, routes: RouteTable) {
  const path = pathOf(request.url)
  return `${JSON.stringify({
    time: new Date().toISOString(),
    request_id: response.headers.get('x-request-id'),
    method: request.method,
    route: routes.match(path)?.template ?? null,
    status: response.status,
    ms: Math.round((performance.now() - started) * 100) / 100,
    bytes: contentLength(response),
  })}\n`
}

/** The body size when the answer declares it; null for bodies whose size is not known upfront. */
function contentLength(response: Response): number | null {
  const header = response.headers.get('content-length')
  if (header !== null) return Number(header)
  return response.body === null ? 0 : null
}

/** Elysia caught nothing? Answer with the envelope anyway, never a stack. */
function lastResort(error: unknown, request: Request, config: Config, log: Logger): Response {
  const requestId = requestIdFor(request)
  log.error('unhandled error outside the router', {
    request_id: requestId,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  })
  return errorResponse(
    new AppError('INTERNAL_ERROR', 'Something went wrong inside roster'),
    requestId,
    publicBaseUrl(request, config.publicUrl),
  )
}

function describeListenFailure(config: Config, error: unknown): string {
  const code = (error as { code?: string }).code
  const where = `${config.host}:${config.port}`
  if (code === 'EADDRINUSE') return `port ${config.port} on ${config.host} is already in use`
  if (code === 'EACCES')
    return `not allowed to listen on ${where} (ports below 1024 need privileges)`
  if (code === 'EADDRNOTAVAIL') return `${config.host} is not an address of this machine`
  return `cannot listen on ${where}: ${(error as Error).message}`
}
