import type { Server } from 'bun'
import { createApp } from './app'
import type { Config } from './config'
import { type Deps, makeDeps, purgeExpired, sweepAbandonedUploads } from './deps'
import { AppError } from './errors/errors'
import { AccessLog } from './http/access-log'
import { errorResponse } from './http/error-handler'
import { RouteTable } from './http/route-table'
import { serveApp } from './http/serve-app'
import type { Logger } from './log'

/**
 * Bun answers bodies over its own limit with a bare 413 before roster sees them, so that limit
 * sits far above roster's (JSON 1 MiB, uploads --max-upload-size), which roster enforces itself
 * with the error envelope: by Content-Length up front, and by counting streamed bytes.
 */
const MAX_REQUEST_BODY = Number.MAX_SAFE_INTEGER
/** Expired sessions, tokens and idempotency answers are deleted this often. */
const PURGE_INTERVAL_MS = 60 * 60 * 1000
/** A bucket's abandoned uploads are looked for this often (each goes once idle 5 minutes). */
const UPLOAD_SWEEP_INTERVAL_MS = 60 * 1000
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

/**
 * Opens the data dir, migrates, and listens. Routes are served by Bun's own router (see
 * serve-app.ts; measured 9 µs less CPU per request than one fetch handler in front).
 * Throws DataDirError, DatabaseOpenError or ServerStartError.
 */
export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const deps = await makeDeps(config, log, undefined, {
    sweepUploads: true,
    serving: true,
    turnReads: true,
  })
  const routes = new RouteTable()
  const accessLog = new AccessLog(config.logFile)
  const app = createApp(deps, { routes, accessLog })
  let server: Server<unknown>
  try {
    server = serveApp(app, {
      hostname: config.host,
      port: config.port,
      // Without SO_REUSEPORT a second server on the same port fails instead of sharing it.
      reusePort: false,
      development: false,
      idleTimeout: 30,
      maxRequestBodySize: MAX_REQUEST_BODY,
      error: (error) => lastResort(error, log),
    })
  } catch (error) {
    await deps.close()
    throw new ServerStartError(describeListenFailure(config, error))
  }
  deps.webhooks.worker.start()
  deps.mail.worker.start()
  try {
    await deps.outbound.start()
  } catch (error) {
    await server.stop(true)
    await deps.webhooks.worker.stop()
    await deps.mail.worker.stop()
    await deps.close()
    throw error
  }
  const housekeeping = setInterval(() => void purgeExpired(deps), PURGE_INTERVAL_MS)
  housekeeping.unref()
  const uploadSweep = setInterval(
    () => void sweepAbandonedUploads(deps).catch(() => {}),
    UPLOAD_SWEEP_INTERVAL_MS,
  )
  uploadSweep.unref()

  let stopping: Promise<void> | null = null
  const stop = () => {
    stopping ??= (async () => {
      clearInterval(housekeeping)
      clearInterval(uploadSweep)
      const closed = server.stop(false)
      // Live feeds never finish by themselves: they end now, and their clients resume elsewhere.
      deps.feed.close()
      const deadline = Date.now() + SHUTDOWN_GRACE_MS
      while (server.pendingRequests > 0 && Date.now() < deadline) await Bun.sleep(5)
      await Promise.race([closed, Bun.sleep(Math.max(0, deadline - Date.now()))])
      await server.stop(true)
      // The handler in flight finishes; the rest stays in the inbox for the next start.
      await deps.webhooks.worker.stop()
      // The message being sent goes or fails; the rest waits in the outbox for the next start.
      await deps.mail.worker.stop()
      // Deliveries under way are cut short and stay queued: the next start sends them again.
      await deps.outbound.stop()
      await accessLog.close()
      await deps.close()
    })()
    return stopping
  }

  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return { url: `http://${host}:${server.port}`, port: server.port ?? config.port, deps, stop }
}

/** Something escaped Elysia: answer with the envelope anyway, never a stack. */
function lastResort(error: unknown, log: Logger): Response {
  const requestId = `req_fallback_${Date.now().toString(36)}`
  log.error('unhandled error outside the router', {
    request_id: requestId,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  })
  return errorResponse(
    new AppError('INTERNAL_ERROR', 'Something went wrong inside roster'),
    requestId,
    'http://localhost',
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
