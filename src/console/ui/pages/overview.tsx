import { Fragment } from 'preact'
import { call, session } from '../api'
import { ErrorNote, formatBytes, formatDuration, useLoad } from '../components'

interface Health {
  status: string
  version: string
  uptime_s: number
  checks: Record<string, string>
  disk_free_bytes?: number
}

interface Counts {
  data: { users: number; uploads: number; webhook_events: number }
  /** The key that asked; null when an admin asked with its own sign-in. */
  key: { id: number; name: string } | null
}

interface EventTotal {
  pagination: { total: number }
}

async function loadOverview() {
  // /health answers 503 with the same body when a check fails: show it, do not throw.
  const health = await fetch('/health', { cache: 'no-store' }).then(
    (response) => response.json() as Promise<Health>,
  )
  const [counts, pending, failed] = await Promise.all([
    call<Counts>('/data'),
    call<EventTotal>('/webhooks/events?status=pending&limit=1'),
    call<EventTotal>('/webhooks/events?status=failed&limit=1'),
  ])
  return {
    health,
    counts: counts.body,
    pending: pending.body.pagination.total,
    failed: failed.body.pagination.total,
  }
}

/** Version, uptime, the health checks, and how much there is. */
export function OverviewPage() {
  const { data, error, reload } = useLoad(loadOverview, [])
  return (
    <>
      <ErrorNote error={error} />
      {data !== null && (
        <>
          <section aria-labelledby="server-heading">
            <h2 id="server-heading">Server</h2>
            <dl class="facts">
              <dt>Status</dt>
              <dd class={data.health.status === 'ok' ? 'ok' : 'bad'}>{data.health.status}</dd>
              <dt>Version</dt>
              <dd>{data.health.version}</dd>
              <dt>Uptime</dt>
              <dd>{formatDuration(data.health.uptime_s)}</dd>
              {Object.entries(data.health.checks).map(([name, state]) => (
                <Fragment key={name}>
                  <dt>Check: {name}</dt>
                  <dd class={state === 'ok' ? 'ok' : 'bad'}>{state}</dd>
                </Fragment>
              ))}
              {data.health.disk_free_bytes !== undefined && (
                <>
                  <dt>Free disk space</dt>
                  <dd>{formatBytes(data.health.disk_free_bytes)}</dd>
                </>
              )}
            </dl>
          </section>
          <section aria-labelledby="counts-heading">
            <h2 id="counts-heading">Data</h2>
            <dl class="facts">
              <dt>Users</dt>
              <dd>{data.counts.data.users}</dd>
              <dt>Uploads</dt>
              <dd>{data.counts.data.uploads}</dd>
              <dt>Webhook events</dt>
              <dd>{data.counts.data.webhook_events}</dd>
              <dt>Pending webhook events</dt>
              <dd>{data.pending}</dd>
              <dt>Failed webhook events</dt>
              <dd class={data.failed === 0 ? undefined : 'bad'}>{data.failed}</dd>
            </dl>
            <p class="muted">
              {data.counts.key === null
                ? `Signed in as the admin ${session.admin() ?? ''}.`
                : `Signed in with the key “${data.counts.key.name}” (id ${data.counts.key.id}).`}
            </p>
          </section>
        </>
      )}
      <button type="button" onClick={reload}>
        Refresh
      </button>
    </>
  )
}
