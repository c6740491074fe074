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

interface Mail {
  id: number
  flow: string
  to: string
  subject: string
  status: 'requested' | 'pending' | 'sent' | 'failed' | 'suppressed'
  attempts: number
  last_error: string | null
  created_at: string
  sent_at: string | null
  text: string | null
}

interface MailPage {
  data: Mail[]
  pagination: OffsetPage
}

const STATUSES = ['requested', 'pending', 'sent', 'failed', 'suppressed'] as const

/** The link a message carries, while it is not sent (a developer without a mail server opens it). */
function linkOf(mail: Mail): string | null {
  return /https?:\/\/\S+/.exec(mail.text ?? '')?.[0] ?? null
}

/** The mail outbox: status, attempts, last error; a failed message sent again. */
export function MailOutboxPage() {
  const list = useChronologicalView('-created', 'Created', { status: '' })
  const { offset, limit, setOffset, setLimit, sort, sorting } = list
  const status = list.view.status
  const { data, error, reload } = useLoad(async () => {
    const query = new URLSearchParams({ limit: String(limit), offset: String(offset) })
    if (status !== '') query.set('status', status)
    if (sort !== '-created') query.set('sort', sort)
    return (await call<MailPage>(`/mail?${query}`)).body
  }, [status, sort, offset, limit])
  const [notice, setNotice] = useState<string | null>(null)
  const [actionError, setActionError] = useState<unknown>(null)

  const resend = async (mail: Mail) => {
    setActionError(null)
    try {
      await call(`/mail/${mail.id}/resend`, { method: 'POST' })
      setNotice(`Message ${mail.id} to ${mail.to} will be sent again now.`)
      reload()
    } catch (reason) {
      setActionError(reason)
    }
  }

  return (
    <>
      <StatusFilter
        id="mail-status-filter"
        statuses={STATUSES}
        value={status}
        onChange={(next) => list.filter({ status: next })}
        onRefresh={reload}
      />
      <p class="hint">
        Without <code>--smtp-url</code> roster sends nothing: messages stay pending here, and their
        link can be opened from this page.
      </p>
      <Notice text={notice} />
      <ErrorNote error={error ?? actionError} />
      {data !== null && (
        <>
          <ListTable
            sorting={sorting}
            caption={<>Mail, newest first</>}
            columns={[
              'To',
              'Flow',
              'Status',
              'Attempts',
              'Last error or link',
              'Created',
              'Actions',
            ]}
          >
            {data.data.map((mail) => {
              const link = mail.status === 'pending' ? linkOf(mail) : null
              return (
                <tr key={mail.id}>
                  <td>{mail.to}</td>
                  <td>{mail.flow}</td>
                  <td class={mail.status === 'failed' ? 'bad' : undefined}>{mail.status}</td>
                  <td>{mail.attempts}</td>
                  <td>
                    {link !== null ? (
                      <a href={link} rel="noreferrer">
                        Open the link
                      </a>
                    ) : (
                      (mail.last_error ?? '—')
                    )}
                  </td>
                  <td>{formatDate(mail.created_at)}</td>
                  <td class="row-actions">
                    {mail.status === 'failed' && (
                      <RowAction
                        text="Resend"
                        label={`Resend message ${mail.id} to ${mail.to}`}
                        onClick={() => resend(mail)}
                      />
                    )}
                  </td>
                </tr>
              )
            })}
          </ListTable>
          <Pager page={data.pagination} onOffset={setOffset} onLimit={setLimit} />
        </>
      )}
    </>
  )
}
