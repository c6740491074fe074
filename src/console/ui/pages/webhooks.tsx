import { useState } from 'preact/hooks'
import { call } from '../api'
import {
  ErrorNote,
  formatDate,
  ListTable,
  Notice,
  type OffsetPage,
  Pager,
  RowAction,
  StatusFilter,
  useChronologicalView,
  useLoad,
} from '../components'

interface WebhookEvent {
  id: string
  scheme: string
  type: string
  status: 'pending' | 'processed' | 'ignored' | 'failed'
  attempts: number
  error: string | null
  received_at: string
  processed_at: string | null
}

interface EventPage {
  data: WebhookEvent[]
  pagination: OffsetPage
}

const STATUSES = ['pending', 'processed', 'ignored', 'failed'] as const

/** The stored events with their outcome, filtered by status; retry a failed one. */
export function WebhooksPage() {
  const list = useChronologicalView('-created', 'Received', { status: '' })
  const { offset, limit, setOffset, setLimit, sort, sorting } = list
  const status = list.view.status
  const { data, error, reload } = useLoad(async () => {
    const query = new URLSearchParams({ limit: String(limit), offset: String(offset) })
    if (status !== '') query.set('status', status)
    if (sort !== '-created') query.set('sort', sort)
    return (await call<EventPage>(`/webhooks/events?${query}`)).body
  }, [status, sort, offset, limit])
  const [notice, setNotice] = useState<string | null>(null)
  const [actionError, setActionError] = useState<unknown>(null)

  const retry = async (event: WebhookEvent) => {
    setActionError(null)
    try {
      await call(`/webhooks/events/${encodeURIComponent(event.id)}/retry`, { method: 'POST' })
      setNotice(`Event ${event.id} will be tried again now.`)
      reload()
    } catch (reason) {
      setActionError(reason)
    }
  }

  return (
    <>
      <StatusFilter
        id="status-filter"
        statuses={STATUSES}
        value={status}
        onChange={(next) => list.filter({ status: next })}
        onRefresh={reload}
      />
      <Notice text={notice} />
      <ErrorNote error={error ?? actionError} />
      {data !== null && (
        <>
          <ListTable
            sorting={sorting}
            caption={<>Webhook events, newest first</>}
            columns={['Event id', 'Type', 'Status', 'Attempts', 'Error', 'Received', 'Actions']}
          >
            {data.data.map((event) => (
              <tr key={`${event.scheme}:${event.id}`}>
                <td>
                  <code>{event.id}</code>
                </td>
                <td>{event.type}</td>
                <td class={event.status === 'failed' ? 'bad' : undefined}>{event.status}</td>
                <td>{event.attempts}</td>
                <td>{event.error ?? '—'}</td>
                <td>{formatDate(event.received_at)}</td>
                <td class="row-actions">
                  {event.status === 'failed' && (
                    <RowAction
                      text="Retry"
                      label={`Retry event ${event.id}`}
                      onClick={() => retry(event)}
                    />
                  )}
                </td>
              </tr>
            ))}
          </ListTable>
          <Pager page={data.pagination} onOffset={setOffset} onLimit={setLimit} />
        </>
      )}
    </>
  )
}
