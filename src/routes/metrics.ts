import { Elysia } from 'elysia'
import { NO_STORE } from '../http/credentials'
import type { AuthPlugin } from './auth/plugin'
import { guardOf } from './authorisation'

export const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/**
 * GET /metrics (unversioned only): Prometheus text. It follows the access mode (section 11):
 * open, anyone may read it; protected, it needs an API key (as X-API-Key, or as
 * `Authorization: Bearer`, which is how Prometheus sends a credential).
 */
export function metricsRoutes(
  render: () => Promise<string>,
  inputs: { auth: AuthPlugin; usersAccess: 'open' | 'protected' },
) {
  const guard = guardOf('GET /metrics', inputs.usersAccess)
  return new Elysia().use(inputs.auth).get(
    '/metrics',
    ({ set }) => {
      set.headers['content-type'] = METRICS_TYPE
      set.headers['cache-control'] = NO_STORE
      return render()
    },
    {
      ...guard.hook,
      detail: {
        security: guard.security,
        tags: ['operations'],
        summary: 'Metrics (Prometheus text format 0.0.4)',
        description:
          'Open while /users is open; in protected mode it needs an API key with metrics:read (or an admin), as X-API-Key or as Authorization: Bearer (what Prometheus sends). roster_http_requests_total{method,route,status}, roster_http_request_duration_seconds{route} (histogram), roster_uploads_total, roster_upload_files_total, roster_upload_bytes_total, roster_webhook_events_total{scheme,status}, roster_users, roster_webhook_events_pending, roster_build_info{version} and the process_* metrics. Routes are labelled by template (/users/:id), never by raw path; a path no route has is "unmatched".',
        responses: {
          200: {
            description: 'The metrics',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
  )
}
