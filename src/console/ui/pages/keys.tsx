import { useState } from 'preact/hooks'
import { call, problemWith, session } from '../api'
import {
  Confirm,
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
  SubmitOrCancel,
  useChronologicalView,
  useLoad,
} from '../components'
import { SCOPES } from '../scopes'

interface ApiKey {
  id: number
  name: string
  prefix: string
  created_at: string
  last_used_at: string | null
  scopes: string[]
  expires_at: string | null
}

interface KeyPage {
  data: ApiKey[]
  pagination: OffsetPage
}

interface Me {
  key: { id: number } | null
}

/** List, create (the key shown once), revoke. */
export function KeysPage() {
  const { offset, limit, setOffset, setLimit, sort, sortParam, sorting } = useChronologicalView(
    'created',
    'Id',
    {},
  )
  const { data, error, reload } = useLoad(async () => {
    const [page, me] = await Promise.all([
      call<KeyPage>(`/api-keys?limit=${limit}&offset=${offset}${sortParam}`),
      call<Me>('/data'),
    ])
    return { page: page.body, ownId: me.body.key?.id ?? null }
  }, [offset, limit, sort])
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
          <ListTable
            sorting={sorting}
            caption={<>Active API keys</>}
            columns={['Id', 'Name', 'Starts with', 'Scopes', 'Expires', 'Last used', 'Actions']}
          >
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
                <td>{key.scopes.join(', ')}</td>
                <td>{key.expires_at === null ? 'never' : formatDate(key.expires_at)}</td>
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
          </ListTable>
          <Pager page={data.page.pagination} onOffset={setOffset} onLimit={setLimit} />
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
  const [everything, setEverything] = useState(true)
  const [scopes, setScopes] = useState<string[]>([])
  const [expires, setExpires] = useState('')
  const [password, setPassword] = useState('')
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null)
  const [error, setError] = useState<unknown>(null)

  const toggle = (scope: string, on: boolean) =>
    setScopes((held) => (on ? [...held, scope] : held.filter((other) => other !== scope)))
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const body: Record<string, unknown> = {
        name: name.trim(),
        scopes: everything ? ['*'] : scopes,
      }
      // A date: the key works until the end of that day, in the browser's time zone.
      if (expires !== '') body.expires_at = new Date(`${expires}T23:59:59`).toISOString()
      if (password !== '') body.current_password = password
      const answer = await call<{ key: string; name: string }>('/api-keys', {
        method: 'POST',
        body,
      })
      setCreated(answer.body)
    } catch (reason) {
      setError(reason)
    }
  }
  if (created !== null) {
    return (
      <ShownOnce
        title="API key created"
        label="The new key"
        copy="Copy key"
        value={created.key}
        onClose={props.onClose}
      >
        <p>
          This is the only time the key “{created.name}” is shown. Store it now; roster keeps only
          its hash.
        </p>
      </ShownOnce>
    )
  }
  return (
    <Dialog title="New API key" onClose={props.onClose}>
      <form onSubmit={submit}>
        <Field
          label="Name"
          name="key-name"
          value={name}
          required
          onInput={setName}
          error={problemWith(error, 'name')}
        />
        <fieldset>
          <legend>What the key may do</legend>
          <p class="choices">
            <label>
              <input
                type="checkbox"
                checked={everything}
                onChange={(event) =>
                  setEverything((event.currentTarget as HTMLInputElement).checked)
                }
              />{' '}
              Everything (*)
            </label>
            {!everything &&
              SCOPES.map((scope) => (
                <label key={scope}>
                  <input
                    type="checkbox"
                    name="scope"
                    value={scope}
                    checked={scopes.includes(scope)}
                    onChange={(event) =>
                      toggle(scope, (event.currentTarget as HTMLInputElement).checked)
                    }
                  />{' '}
                  {scope}
                </label>
              ))}
          </p>
          {problemWith(error, 'scopes') !== undefined && (
            <small class="field-error">{problemWith(error, 'scopes')}</small>
          )}
        </fieldset>
        <Field
          label="Expires (optional)"
          name="key-expires"
          type="date"
          value={expires}
          onInput={setExpires}
          hint="The key stops working after this day. Leave empty for a key that does not expire."
          error={problemWith(error, 'expires_at')}
        />
        {session.admin() !== null && (
          <Field
            label="Your password"
            name="current-password"
            type="password"
            autoComplete="current-password"
            value={password}
            onInput={setPassword}
            hint="Needed when you signed in more than 5 minutes ago: a new key is a new credential."
            error={problemWith(error, 'current_password')}
          />
        )}
        <ErrorNote error={error} />
        <SubmitOrCancel submit="Create key" onCancel={props.onClose} />
      </form>
    </Dialog>
  )
}
