import { type Metrics, UNMATCHED_ROUTE } from '../metrics/metrics'
import type { AccessLog } from './access-log'
import type { MappedAnswer } from './json-response'
import { pathOf, type RouteTable } from './route-table'
import { CATCH_ALL } from './unrouted'

const STARTED = Symbol('roster.startedAt')
const OBSERVED = Symbol('roster.observed')

interface Timed {
  [STARTED]?: number
  [OBSERVED]?: true
}

/**
 * What every answer feeds: the metrics and, when the server has one, the access log.
 * `startClock` (called first by the request pipeline) times each request; `onAnswer` (given to
 * jsonResponses) records it as the answer leaves. The start time rides on the request's `set`
 * object under a symbol (the same object reaches every hook); a WeakMap keyed by Request
 * measured slower and left more for the GC.
 */
export function answerObservers(options: {
  routes: RouteTable
  metrics: Metrics
  accessLog?: AccessLog
}) {
  const { routes, metrics, accessLog } = options
  return {
    /** Times the request; the pipeline calls it first. */
    startClock(set: object): void {
      ;(set as Timed)[STARTED] = performance.now()
    },
    /**
     * Records an answer once. Errors are reported by the error handler (errors thrown by
     * onRequest hooks, the rate limit and the CSRF guard, never reach mapResponse); when one
     * then passes through mapResponse too, the second report is ignored.
     */
    onAnswer(answer: MappedAnswer): void {
      const timed = answer.set as Timed
      if (timed[OBSERVED]) return
      timed[OBSERVED] = true
      const begun = timed[STARTED] ?? performance.now()
      const ms = performance.now() - begun
      // The catch-all answers 404, 405 and preflights for every path: label it with the route
      // the path belongs to, if any, never with the path itself.
      const route =
        answer.route === CATCH_ALL
          ? (routes.match(pathOf(answer.request.url))?.template ?? null)
          : answer.route
      metrics.http.record(answer.request.method, route ?? UNMATCHED_ROUTE, answer.status, ms / 1000)
      accessLog?.record({
        at: Date.now(),
        requestId: answer.requestId,
        method: answer.request.method,
        route,
        status: answer.status,
        ms: Math.round(ms * 100) / 100,
        bytes: answer.bytes,
      })
    },
  }
}
