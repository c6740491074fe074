import { Elysia } from 'elysia'
import { NO_STORE } from '../http/credentials'

export const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/**
 * GET /metrics (unversioned only): Prometheus text. Open like /health: it holds counts and
 * timings, no user data; put it behind the firewall with the rest of the operator's ports.
 */
export function metricsRoutes(render: () => Promise<string>) {
  return new Elysia().get(
    '/metrics',
    ({ set }) => {
      set.headers['content-type'] = METRICS_TYPE
      set.headers['cache-control'] = NO_STORE
      return render()
    },
    {
      detail: {
        tags: ['operations'],
        summary: 'Metrics (Prometheus text format 0.0.4)',
        description:
          'roster_http_requests_total{method,route,status}, roster_http_request_duration_seconds{route} (histogram), roster_uploads_total, roster_upload_files_total, roster_upload_bytes_total, roster_webhook_events_total{scheme,status}, roster_users, roster_webhook_events_pending, roster_build_info{version} and the process_* metrics. Routes are labelled by template (/users/:id), never by raw path; a path no route has is "unmatched".',
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
