import { accessSync, constants, existsSync } from 'node:fs'
import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { Deps } from '../deps'
import { errorBody } from '../http/error-handler'
import { AppError } from '../http/errors'
import { jsonResponse } from '../http/json-response'
import { publicBaseUrl } from '../http/request-context'

const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('unavailable')]),
  version: t.String(),
  uptime_s: Type.Integer({ minimum: 0 }),
  checks: t.Object({
    database: t.Union([t.Literal('ok'), t.Literal('failing')]),
    storage: t.Union([t.Literal('ok'), t.Literal('failing')]),
  }),
})

/**
 * GET /health: 200 when the database answers and the upload directory is writable, else 503
 * with `status: unavailable` (and the error envelope's fields, as every non-2xx answer has).
 */
export function healthRoutes(deps: Deps, version: string, prefix: '' | '/v1' | '/v2') {
  // Reads a real table (SELECT 1 would not touch the file) and notices a deleted database file.
  const ping = deps.db.$client.query('SELECT count(*) FROM __drizzle_migrations')
  const databaseOk = () => {
    try {
      ping.get()
      return existsSync(deps.dbPath)
    } catch {
      return false
    }
  }
  const storageOk = () => {
    try {
      accessSync(deps.uploadDir, constants.W_OK)
      return true
    } catch {
      return false
    }
  }
  return new Elysia({ prefix }).get(
    '/health',
    ({ request, set }) => {
      const database = databaseOk() ? 'ok' : 'failing'
      const storage = storageOk() ? 'ok' : 'failing'
      const healthy = database === 'ok' && storage === 'ok'
      const body = {
        status: healthy ? 'ok' : 'unavailable',
        version,
        uptime_s: Math.floor((Date.now() - deps.startedAt) / 1000),
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
      response: { 200: Health },
      detail: {
        tags: ['operations'],
        summary: 'Health',
        description:
          '200 when the database and the upload directory work; 503 with status "unavailable" (plus the error envelope) when one fails.',
      },
    },
  )
}
