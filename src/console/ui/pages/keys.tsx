import { useState } from 'preact/hooks'
import { call } from '../api'
import {
  ColumnHeads,
  Confirm,
  Dialog,
  ErrorNote,
  Field,
  formatDate,
  Notice,
  type OffsetPage,
  Pager,
  RowAction,
  SubmitOrCancel,
  useLoad,
} from '../components'

interface ApiKey {
  id: number
  name: string
  prefix: string
  created_at: string
  last_used_at: string | null
}

interface KeyPage {
  data: ApiKey[]
  pagination: OffsetPage
}

interface Me {
  key: { id: number }
}

/** List, create (the key shown once), revoke. */
export function KeysPage() {
  const [offset, setOffset] = useState(0)
  const { data, error, reload } = useLoad(async () => {
    const [page, me] = await Promise.all([
      call<KeyPage>(`/api-keys?limit=20&offset=${offset}`),
      call<Me>('/data'),
    ])
    return { page: page.body, ownId: me.body.key.id }
  }, [offset])
  const [creating, setCreating] = useState(false)
  const [revoking, setRevoking] = useState<ApiKey | null>(null)
  const [notice, setNotice] = useState<string | null>(null)

  return (
    <>
      <div class="actions">
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          New API key
        </button>
      </div>
      <Notice text={notice} />
      <ErrorNote error={error} />
      {data !== null && (
        <>
          <table>
            <caption>Active API keys</caption>
            <ColumnHeads names={['Id', 'Name', 'Starts with', 'Created', 'Last used', 'Actions']} />
            <tbody>
              {data.page.data.map((key) => (
                <tr key={key.id}>
                  <td>{key.id}</td>
                  <td>
                    {key.name}
                    {key.id === data.ownId && <span class="tag"> (this console)</span>}
                  </td>
                  <td>
                    <code>{key.prefix}…</code>
                  </td>
                  <td>{formatDate(key.created_at)}</td>
                  <td>{formatDate(key.last_used_at)}</td>
                  <td class="row-actions">
                    <RowAction
                      text="Revoke"
                      label={`Revoke key ${key.id}`}
                      danger
                      onClick={() => setRevoking(key)}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={data.page.pagination} onOffset={setOffset} />
        </>
      )}
      {creating && (
        <CreateKey
          onClose={() => {
            setCreating(false)
            reload()
          }}
        />
      )}
      {revoking !== null && (
        <Confirm
          title="Revoke this key?"
          action="Revoke key"
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            await call(`/api-keys/${revoking.id}`, { method: 'DELETE' })
            setNotice(`Key ${revoking.id} revoked.`)
            reload()
          }}
        >
          <p>
            Every program using “<strong>{revoking.name}</strong>” ({revoking.prefix}…) is refused
            from its next request.
            {revoking.id === data?.ownId &&
              ' This console signs in with it: you will be signed out.'}
          </p>
        </Confirm>
      )}
    </>
  )
}

function CreateKey(props: { onClose: () => void }) {
  const [name, setName] = useState('')
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [copied, setCopied] = useState<string | null>(null)

  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const answer = await call<{ key: string; name: string }>('/api-keys', {
        method: 'POST',
        body: { name: name.trim() },
      })
      setCreated(answer.body)
    } catch (reason) {
      setError(reason)
    }
  }
  const copy = async () => {
    if (created === null) return
    try {
      await navigator.clipboard.writeText(created.key)
      setCopied('Copied to the clipboard.')
    } catch {
      setCopied('The browser refused the clipboard: select the key and copy it.')
    }
  }

  if (created !== null) {
    return (
      <Dialog title="API key created" onClose={props.onClose}>
        <p>
          This is the only time the key “{created.name}” is shown. Store it now; roster keeps only
          its hash.
        </p>
        <p class="field">
          <label for="new-key">The new key</label>
          <input id="new-key" class="secret" readOnly value={created.key} />
        </p>
        <Notice text={copied} />
        <div class="actions">
          <button type="button" class="primary" onClick={copy}>
            Copy key
          </button>
          <button type="button" onClick={props.onClose}>
            Done
          </button>
        </div>
      </Dialog>
    )
  }
  return (
    <Dialog title="New API key" onClose={props.onClose}>
      <form onSubmit={submit}>
        <Field label="Name" name="key-name" value={name} required onInput={setName} />
        <ErrorNote error={error} />
        <SubmitOrCancel submit="Create key" onCancel={props.onClose} />
      </form>
    </Dialog>
  )
}
