import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { AppError } from '../errors/errors'
import { errorBody } from '../http/error-handler'
import { jsonResponse } from '../http/json-response'
import { documented, ErrorEnvelope } from '../http/openapi-schemas'
import { publicBaseUrl } from '../http/request-context'
import type { AuthPlugin } from './auth/plugin'
import { principalOf } from './auth/principal'
import { guardOf } from './authorisation'

const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('unavailable')]),
  version: t.String(),
  uptime_s: Type.Integer({ minimum: 0 }),
  checks: t.Object({
    database: t.Union([t.Literal('ok'), t.Literal('failing')]),
    storage: t.Union([t.Literal('ok'), t.Literal('failing')]),
    disk: t.Union([t.Literal('ok'), t.Literal('failing')]),
  }),
  disk_free_bytes: t.Optional(
    t.Union([Type.Integer({ minimum: 0 }), t.Null()], {
      description:
        'Free bytes on the data directory’s disk (null when the file system will not say). In protected mode only shown to a caller with an API key.',
    }),
  ),
  error: t.Optional(ErrorEnvelope.properties.error),
  request_id: t.Optional(t.String()),
})

/** Checks run at most this often; a flood of health probes then costs no database work. */
export const HEALTH_CHECK_INTERVAL_MS = 1000

type CheckState = 'ok' | 'failing'

/**
 * GET /health: 200 when the database answers (and its file is still there) and the upload
 * directory is writable, else 503 with `status: unavailable` plus the error envelope's fields.
 * The checks run at most once a second; the answer between runs is built from their result.
 */
export function healthRoutes(
  inputs: {
    checks: () => CheckResults | Promise<CheckResults>
    version: string
    clock: () => number
    startedAt: number
    publicUrl: string | null
    auth: AuthPlugin
    /** Protected mode: figures (free bytes) only for a caller with an API key (section 11). */
    figuresNeedKey: boolean
  },
  prefix: '' | '/v1' | '/v2',
) {
  const { checks, version, clock, startedAt, publicUrl, figuresNeedKey } = inputs
  const answer = (
    results: CheckResults,
    request: Request,
    set: { headers: Record<string, unknown> },
  ) => {
    const { database, storage, disk, freeBytes } = results
    const healthy = database === 'ok' && storage === 'ok' && disk === 'ok'
    const showFigures = !figuresNeedKey || principalOf(set)?.kind === 'apiKey'
    const status = healthy ? 'ok' : 'unavailable'
    const uptime = Math.floor((clock() - startedAt) / 1000)
    const checks = { database, storage, disk }
    // Two literal shapes rather than a spread: /health is probed often and answers fast.
    const body = showFigures
      ? { status, version, uptime_s: uptime, checks, disk_free_bytes: freeBytes }
      : { status, version, uptime_s: uptime, checks }
    if (healthy) return body
    const failing = Object.entries(body.checks)
      .filter(([, state]) => state === 'failing')
      .map(([name]) =>
        name === 'disk' && showFigures ? `disk (full: ${freeBytes ?? 'unknown'} bytes free)` : name,
      )
    const error = new AppError('SERVICE_UNAVAILABLE', `Failing checks: ${failing.join(', ')}`)
    const requestId = String(set.headers['x-request-id'])
    const docsBase = publicBaseUrl(request, publicUrl)
    return jsonResponse({ ...body, ...errorBody(error, requestId, docsBase) }, 503)
  }
  // Open mode needs no credential here at all: the hook is left out of the probe's path.
  const guard = guardOf('GET /health', figuresNeedKey ? 'protected' : 'open')
  const figuresAuth = figuresNeedKey ? guard.hook : {}
  return new Elysia({ prefix })
    .use(inputs.auth)
    .get(
      '/health',
      ({ request, set }) => {
        const results = checks()
        if (results instanceof Promise) return results.then((done) => answer(done, request, set))
        return answer(results, request, set)
      },
      {
        ...figuresAuth,
        detail: {
          tags: ['operations'],
          summary: 'Health',
          description:
            '200 when the database and the upload directory work and writes are not being refused for lack of space; 503 with status "unavailable" (plus the error envelope) when one fails. `disk` is failing from a write refused with 507 until a write succeeds again or space is freed; `disk_free_bytes` is the space left. Checks run at most once a second.',
          security: guard.security,
          responses: documented({ 200: Health, 503: Health }),
        },
      },
    )
    .get('/health/live', () => ({ status: 'ok' as const }), {
      detail: {
        tags: ['operations'],
        summary: 'Liveness',
        description:
          'Answers 200 while the process answers at all: for a supervisor deciding whether to restart roster. Checks nothing else.',
        responses: documented({ 200: Live }),
      },
    })
    .get(
      '/health/ready',
      ({ request, set }) => {
        const results = checks()
        if (results instanceof Promise) return results.then((done) => ready(done, request, set))
        return ready(results, request, set)
      },
      {
        detail: {
          tags: ['operations'],
          summary: 'Readiness',
          description:
            'For load balancers: 200 while the database answers, else 503. A failing bucket or a full disk does not take the instance out (uploads and downloads answer 503 then, everything else works); GET /health reports those. Checks run at most once a second.',
          responses: documented({ 200: Ready, 503: Ready }),
        },
      },
    )

  function ready(
    results: CheckResults,
    request: Request,
    set: { headers: Record<string, unknown> },
  ) {
    const body = {
      status: results.database === 'ok' ? 'ok' : 'unavailable',
      checks: { database: results.database },
    } as const
    if (results.database === 'ok') return body
    const error = new AppError('SERVICE_UNAVAILABLE', 'Failing checks: database')
    const requestId = String(set.headers['x-request-id'])
    const docsBase = publicBaseUrl(request, publicUrl)
    return jsonResponse({ ...body, ...errorBody(error, requestId, docsBase) }, 503)
  }
}

const Live = t.Object({ status: t.Literal('ok') })

const Ready = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('unavailable')]),
  checks: t.Object({ database: t.Union([t.Literal('ok'), t.Literal('failing')]) }),
  error: t.Optional(ErrorEnvelope.properties.error),
  request_id: t.Optional(t.String()),
})

/** The checks, re-run when their last result is older than HEALTH_CHECK_INTERVAL_MS. */
export interface CheckResults {
  database: CheckState
  storage: CheckState
  disk: CheckState
  freeBytes: number | null
}

/** What /health checks; each check throws (or rejects) when it fails. */
export interface HealthSources {
  clock: () => number
  disk: { state(): { full: boolean; freeBytes: number | null } }
  checkDatabase: () => void | Promise<void>
  checkStorage: () => void | Promise<void>
}

/**
 * The checks, run at most once a second. Synchronous checks (SQLite, local disk) give their
 * result at once; when one answers a promise (PostgreSQL, object storage), the requests that
 * arrive meanwhile share that one run and wait for it.
 */
export function healthChecks(sources: HealthSources): () => CheckResults | Promise<CheckResults> {
  let checkedAt = Number.NEGATIVE_INFINITY
  let result: CheckResults = { database: 'ok', storage: 'ok', disk: 'ok', freeBytes: null }
  let running: Promise<CheckResults> | null = null
  const passes = (check: () => void | Promise<void>): CheckState | Promise<CheckState> => {
    try {
      const outcome = check()
      if (outcome instanceof Promise) {
        return outcome.then(
          () => 'ok' as const,
          () => 'failing' as const,
        )
      }
      return 'ok'
    } catch {
      return 'failing'
    }
  }
  return () => {
    if (running !== null) return running
    const now = sources.clock()
    if (now - checkedAt < HEALTH_CHECK_INTERVAL_MS) return result
    checkedAt = now
    const disk = sources.disk.state()
    const database = passes(sources.checkDatabase)
    const storage = passes(sources.checkStorage)
    const done = (database: CheckState, storage: CheckState): CheckResults => {
      result = { disk: disk.full ? 'failing' : 'ok', freeBytes: disk.freeBytes, database, storage }
      return result
    }
    if (!(database instanceof Promise) && !(storage instanceof Promise)) {
      return done(database, storage)
    }
    running = Promise.all([database, storage]).then(([database, storage]) => {
      running = null
      return done(database, storage)
    })
    return running
  }
}
