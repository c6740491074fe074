import { useState } from 'preact/hooks'
import { call, problemWith } from '../api'
import {
  Confirm,
  CursorPager,
  Dialog,
  ErrorNote,
  Field,
  formatDate,
  ListTable,
  Notice,
  type OffsetPage,
  Pager,
  RowAction,
  ShownOnce,
  StatusFilter,
  SubmitOrCancel,
  useChronologicalView,
  useCursorView,
  useHashQuery,
  useLoad,
} from '../components'

interface Endpoint {
  id: number
  url: string
  description: string | null
  events: string[]
  status: 'enabled' | 'disabled'
  disabled_reason: string | null
  previous_secret_expires_at: string | null
  created_at: string
}

interface EndpointPage {
  data: Endpoint[]
  pagination: OffsetPage
}

interface Delivery {
  id: number
  event_id: string
  type: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  next_attempt_at: string | null
  response_status: number | null
  last_error: string | null
  created_at: string
}

interface DeliveryPage {
  data: Delivery[]
  pagination: { next_cursor: string | null }
}

const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const

/** Outbound webhooks: endpoints, their secrets (shown once), and each one's delivery log. */
export function EndpointsPage() {
  const { offset, limit, setOffset, setLimit, sort, sortParam, sorting } = useChronologicalView(
    'created',
    'Created',
    {},
  )
  const { data, error, reload } = useLoad(
    async () =>
      (await call<EndpointPage>(`/webhook-endpoints?limit=${limit}&offset=${offset}${sortParam}`))
        .body,
    [offset, limit, sort],
  )
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<{ title: string; url: string; secret: string } | null>(null)
  const [rotating, setRotating] = useState<Endpoint | null>(null)
  const [deleting, setDeleting] = useState<Endpoint | null>(null)
  // The open delivery log is in the URL beside the list's view: a reload or a link shows it.
  const [log, setLog] = useHashQuery(CLOSED_LOG)
  const logOf = data?.data.find((endpoint) => String(endpoint.id) === log.deliveries) ?? null
  const [notice, setNotice] = useState<string | null>(null)
  const [actionError, setActionError] = useState<unknown>(null)

  const setStatus = async (endpoint: Endpoint, status: Endpoint['status']) => {
    setActionError(null)
    try {
      await call(`/webhook-endpoints/${endpoint.id}`, { method: 'PATCH', body: { status } })
      setNotice(
        status === 'enabled'
          ? `Endpoint ${endpoint.id} enabled: what is queued for it is sent now.`
          : `Endpoint ${endpoint.id} disabled: nothing more is queued for it.`,
      )
      reload()
    } catch (reason) {
      setActionError(reason)
    }
  }
  const disabled = data?.data.filter((endpoint) => endpoint.status === 'disabled') ?? []

  return (
    <>
      {disabled.some((endpoint) => endpoint.disabled_reason?.startsWith('Every attempt')) && (
        <div class="error" role="alert">
          <p>Webhook endpoints that roster disabled after failing:</p>
          <ul>
            {disabled
              .filter((endpoint) => endpoint.disabled_reason?.startsWith('Every attempt'))
              .map((endpoint) => (
                <li key={endpoint.id}>
                  {endpoint.url}: {endpoint.disabled_reason} Fix the receiver, then enable it.
                </li>
              ))}
          </ul>
        </div>
      )}
      <div class="actions">
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          New endpoint
        </button>
      </div>
      <p class="hint">
        Each endpoint receives the audit events it names, POSTed as JSON and signed in the Standard
        Webhooks scheme with its secret, in order, retried with backoff for three days.
      </p>
      <Notice text={notice} />
      <ErrorNote error={error ?? actionError} />
      {data !== null && (
        <>
          <ListTable
            sorting={sorting}
            caption={<>Webhook endpoints</>}
            columns={['Id', 'URL', 'Events', 'Status', 'Created', 'Actions']}
          >
            {data.data.map((endpoint) => (
              <tr key={endpoint.id}>
                <td>{endpoint.id}</td>
                <td>
                  <code>{endpoint.url}</code>
                  {endpoint.description !== null && (
                    <>
                      <br />
                      {endpoint.description}
                    </>
                  )}
                </td>
                <td>{endpoint.events.join(', ')}</td>
                <td class={endpoint.status === 'disabled' ? 'bad' : undefined}>
                  {endpoint.status}
                  {endpoint.disabled_reason !== null && (
                    <>
                      <br />
                      <small>{endpoint.disabled_reason}</small>
                    </>
                  )}
                </td>
                <td>{formatDate(endpoint.created_at)}</td>
                <td class="row-actions">
                  <RowAction
                    text="Deliveries"
                    label={`Deliveries of endpoint ${endpoint.id}`}
                    onClick={() => setLog({ ...CLOSED_LOG, deliveries: String(endpoint.id) })}
                  />
                  {endpoint.status === 'enabled' ? (
                    <RowAction
                      text="Disable"
                      label={`Disable endpoint ${endpoint.id}`}
                      onClick={() => setStatus(endpoint, 'disabled')}
                    />
                  ) : (
                    <RowAction
                      text="Enable"
                      label={`Enable endpoint ${endpoint.id}`}
                      onClick={() => setStatus(endpoint, 'enabled')}
                    />
                  )}
                  <RowAction
                    text="Rotate secret"
                    label={`Rotate secret of endpoint ${endpoint.id}`}
                    onClick={() => setRotating(endpoint)}
                  />
                  <RowAction
                    text="Delete"
                    label={`Delete endpoint ${endpoint.id}`}
                    danger
                    onClick={() => setDeleting(endpoint)}
                  />
                </td>
              </tr>
            ))}
          </ListTable>
          <Pager page={data.pagination} onOffset={setOffset} onLimit={setLimit} />
        </>
      )}
      {creating && (
        <CreateEndpoint
          onClose={() => setCreating(false)}
          onCreated={(made) => {
            setCreating(false)
            setSecret({ title: 'Endpoint created', url: made.url, secret: made.secret })
            reload()
          }}
        />
      )}
      {secret !== null && <SecretShown {...secret} onClose={() => setSecret(null)} />}
      {rotating !== null && (
        <Confirm
          title="Rotate this endpoint’s secret?"
          action="Rotate secret"
          onClose={() => setRotating(null)}
          onConfirm={async () => {
            const answer = await call<{ secret: string }>(
              `/webhook-endpoints/${rotating.id}/rotate-secret`,
              { method: 'POST', body: {} },
            )
            setSecret({ title: 'Secret rotated', url: rotating.url, secret: answer.body.secret })
            reload()
          }}
        >
          <p>
            A new secret signs every delivery to <code>{rotating.url}</code>. For 24 hours the old
            one signs too, so the receiver keeps verifying while it switches.
          </p>
        </Confirm>
      )}
      {deleting !== null && (
        <Confirm
          title="Delete this endpoint?"
          action="Delete endpoint"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await call(`/webhook-endpoints/${deleting.id}`, { method: 'DELETE' })
            setNotice(`Endpoint ${deleting.id} deleted.`)
            reload()
          }}
        >
          <p>
            Nothing more is sent to <code>{deleting.url}</code>; its delivery log goes with it.
          </p>
        </Confirm>
      )}
      {logOf !== null && <DeliveryLog endpoint={logOf} onClose={() => setLog(CLOSED_LOG)} />}
    </>
  )
}

function CreateEndpoint(props: {
  onClose: () => void
  onCreated: (made: { url: string; secret: string }) => void
}) {
  const [url, setUrl] = useState('')
  const [events, setEvents] = useState('user.*')
  const [description, setDescription] = useState('')
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const body: Record<string, unknown> = {
        url: url.trim(),
        events: events
          .split(',')
          .map((pattern) => pattern.trim())
          .filter((pattern) => pattern !== ''),
      }
      if (description.trim() !== '') body.description = description.trim()
      const answer = await call<{ url: string; secret: string }>('/webhook-endpoints', {
        method: 'POST',
        body,
      })
      props.onCreated(answer.body)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title="New webhook endpoint" onClose={props.onClose}>
      <form onSubmit={submit}>
        <Field
          label="URL"
          name="endpoint-url"
          value={url}
          required
          hint="Where roster POSTs the events (http or https)"
          onInput={setUrl}
          error={problemWith(error, 'url')}
        />
        <Field
          label="Events"
          name="endpoint-events"
          value={events}
          required
          hint="Comma-separated: user.created, a kind such as group.*, or * for everything"
          onInput={setEvents}
          error={problemWith(error, 'events')}
        />
        <Field
          label="Description (optional)"
          name="endpoint-description"
          value={description}
          onInput={setDescription}
          error={problemWith(error, 'description')}
        />
        <ErrorNote error={error} />
        <SubmitOrCancel submit="Create endpoint" onCancel={props.onClose} />
      </form>
    </Dialog>
  )
}

/** An endpoint's signing secret, shown once. */
function SecretShown(props: { title: string; url: string; secret: string; onClose: () => void }) {
  return (
    <ShownOnce
      title={props.title}
      label="The signing secret"
      copy="Copy secret"
      value={props.secret}
      onClose={props.onClose}
    >
      <p>
        Deliveries to <code>{props.url}</code> are signed with this secret. This is the only time it
        is shown: give it to the receiver now.
      </p>
    </ShownOnce>
  )
}

/**
 * The URL keys of an endpoint's open delivery log (`#/webhooks-sent?deliveries=3&
 * deliveryStatus=failed&deliveryTrail=…`), all empty while none is open.
 */
const CLOSED_LOG = { deliveries: '', deliveryStatus: '', deliveryTrail: '' }

/** An endpoint's deliveries, newest first, with the last answer and a retry; its view in the URL. */
function DeliveryLog(props: { endpoint: Endpoint; onClose: () => void }) {
  const list = useCursorView({ deliveryStatus: '' }, 'deliveryTrail')
  const { pages } = list
  const { cursor } = pages
  const status = list.view.deliveryStatus
  const { data, error, reload } = useLoad(async () => {
    const query = new URLSearchParams({ limit: '10' })
    if (status !== '') query.set('status', status)
    if (cursor !== null) query.set('cursor', cursor)
    return (await call<DeliveryPage>(`/webhook-endpoints/${props.endpoint.id}/deliveries?${query}`))
      .body
  }, [status, cursor])
  const [notice, setNotice] = useState<string | null>(null)
  const [actionError, setActionError] = useState<unknown>(null)
  const retry = async (delivery: Delivery) => {
    setActionError(null)
    try {
      await call(`/webhook-endpoints/${props.endpoint.id}/deliveries/${delivery.id}/retry`, {
        method: 'POST',
        body: {},
      })
      setNotice(`${delivery.event_id} will be sent again now.`)
      reload()
    } catch (reason) {
      setActionError(reason)
    }
  }
  return (
    <Dialog title={`Deliveries to ${props.endpoint.url}`} onClose={props.onClose}>
      <StatusFilter
        id="delivery-status-filter"
        statuses={DELIVERY_STATUSES}
        value={status}
        onChange={(next) => list.filter({ deliveryStatus: next })}
        onRefresh={reload}
      />
      <Notice text={notice} />
      <ErrorNote error={error ?? actionError} />
      {data !== null && (
        <>
          <ListTable
            caption={<>Deliveries, newest first</>}
            columns={['Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Actions']}
          >
            {data.data.map((delivery) => (
              <tr key={delivery.id}>
                <td>
                  <code>{delivery.event_id}</code> {delivery.type}
                </td>
                <td class={delivery.status === 'failed' ? 'bad' : undefined}>{delivery.status}</td>
                <td>{delivery.attempts}</td>
                <td>{delivery.last_error ?? delivery.response_status ?? '—'}</td>
                <td>{formatDate(delivery.next_attempt_at)}</td>
                <td class="row-actions">
                  <RowAction
                    text={delivery.status === 'delivered' ? 'Send again' : 'Retry'}
                    label={`${delivery.status === 'delivered' ? 'Send again' : 'Retry'} delivery of ${delivery.event_id}`}
                    onClick={() => retry(delivery)}
                  />
                </td>
              </tr>
            ))}
          </ListTable>
          {data.data.length === 0 && <p>No deliveries yet.</p>}
          <CursorPager label="Delivery pages" pages={pages} next={data.pagination.next_cursor} />
        </>
      )}
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Dialog>
  )
}
