import type { Context } from 'elysia'
import { Elysia } from 'elysia'
import { tidyCorsHeaders } from './cors'
import { refusePrototypeQueryKeys } from './query'
import { assignRequestContext } from './request-context'
import { refuseUndecodablePath } from './unrouted'

/** One step of the work done before routing; it refuses a request by throwing an AppError. */
export type RequestStep = (request: Request, set: Context['set'], server: Context['server']) => void

/**
 * The per-request work every route shares, in one onRequest hook: time the request, give it
 * its id and API version, tidy what the CORS plugin set, mark a credentialed answer no-store,
 * then the host check (open mode), the rate limit, a path that cannot be decoded, a query naming a prototype key and the CSRF check, which may refuse it. One hook instead of five: each hook is a call and a check in
 * Elysia's generated handler. Registered after the CORS plugin (whose own hook must run
 * before the tidying); nothing before it can fail, so every answer carries the id.
 *
 * The hook is written without `return` or an `a…sync`/`a…wait` word: Elysia reads a hook's
 * source to decide whether to await it and whether it may answer early.
 */
export function requestPipeline(steps: {
  startClock: (set: object) => void
  markPrivate: RequestStep
  refuseForeignHost: RequestStep
  limitRate: RequestStep | null
  refuseCrossSite: RequestStep
}) {
  const { startClock, markPrivate, refuseForeignHost, limitRate, refuseCrossSite } = steps
  const plugin = new Elysia({ name: 'request-pipeline' })
  // Two versions: naming `server` in a hook's parameters makes Elysia put it on every request's
  // context, which measurably slows every route; only the rate limit needs it (the client IP).
  if (limitRate === null) {
    return plugin.onRequest(function beginRequest({ request, set }) {
      startClock(set)
      assignRequestContext(request, set.headers)
      tidyCorsHeaders(set.headers)
      markPrivate(request, set, null)
      refuseForeignHost(request, set, null)
      refuseUndecodablePath(request)
      refusePrototypeQueryKeys(request)
      refuseCrossSite(request, set, null)
    })
  }
  return plugin.onRequest(function beginLimitedRequest({ request, set, server }) {
    startClock(set)
    assignRequestContext(request, set.headers)
    tidyCorsHeaders(set.headers)
    markPrivate(request, set, server)
    refuseForeignHost(request, set, server)
    limitRate(request, set, server)
    refuseUndecodablePath(request)
    refusePrototypeQueryKeys(request)
    refuseCrossSite(request, set, server)
  })
}
