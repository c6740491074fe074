import { accessSync, constants } from 'node:fs'
import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { Deps } from '../deps'
import { errorBody } from '../http/error-handler'
import { AppError } from '../http/errors'
import { jsonResponse } from '../http/json-response'
import { documented, ErrorEnvelope } from '../http/openapi-schemas'
import { publicBaseUrl } from '../http/request-context'

const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('unavailable')]),
  version: t.String(),
  uptime_s: Type.Integer({ minimum: 0 }),
  checks: t.Object({
    database: t.Union([t.Literal('ok'), t.Literal('failing')]),
    storage: t.Union([t.Literal('ok'), t.Literal('failing')]),
  }),
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
export function healthRoutes(deps: Deps, version: string, prefix: '' | '/v1' | '/v2') {
  const checks = healthChecks(deps)
  return new Elysia({ prefix }).get(
    '/health',
    ({ request, set }) => {
      const { database, storage } = checks()
      const healthy = database === 'ok' && storage === 'ok'
      const body = {
        status: healthy ? 'ok' : 'unavailable',
        version,
        uptime_s: Math.floor((deps.clock() - deps.startedAt) / 1000),
        checks: { database, storage },
      } as const
      if (healthy) return body
      const failing = Object.entries(body.checks)
        .filter(([, state]) => state === 'failing')
        .map(([name]) => name)
      const error = new AppError('SERVICE_UNAVAILABLE', `Failing checks: ${failing.join(', ')}`)
      const requestId = String(set.headers['x-request-id'])
      const docsBase = publicBaseUrl(request, deps.config.publicUrl)
      return jsonResponse({ ...body, ...errorBody(error, requestId, docsBase) }, 503)
    },
    {
      detail: {
        tags: ['operations'],
        summary: 'Health',
        description:
          '200 when the database and the upload directory work; 503 with status "unavailable" (plus the error envelope) when one fails. Checks run at most once a second.',
        responses: documented({ 200: Health, 503: Health }),
      },
    },
  )
}

/** The checks, re-run when their last result is older than HEALTH_CHECK_INTERVAL_MS. */
export function healthChecks(deps: Deps): () => { database: CheckState; storage: CheckState } {
  // Reads a real table (SELECT 1 would not touch the file) and notices a deleted database file.
  const ping = deps.db.$client.query('SELECT count(*) FROM __drizzle_migrations')
  let checkedAt = Number.NEGATIVE_INFINITY
  let result: { database: CheckState; storage: CheckState } = { database: 'ok', storage: 'ok' }
  const passes = (check: () => unknown): CheckState => {
    try {
      check()
      return 'ok'
    } catch {
      return 'failing'
    }
  }
  return () => {
    const now = deps.clock()
    if (now - checkedAt >= HEALTH_CHECK_INTERVAL_MS) {
      checkedAt = now
      result = {
        database: passes(() => {
          ping.get()
          deps.databaseFile.check()
        }),
        storage: passes(() => accessSync(deps.uploadDir, constants.W_OK)),
      }
    }
    return result
  }
}
