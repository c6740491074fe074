import { useState } from 'preact/hooks'
import { ApiError, call, download, saveBlob } from '../api'
import { Confirm, Dialog, ErrorNote, Field, formatDate, Notice, useLoad } from '../components'

interface User {
  id: number
  name: string
  email: string
  created_at: string
  updated_at: string
}

interface UserPage {
  data: User[]
  pagination: { limit: number; total: number; next_cursor: string | null }
}

const PAGE_SIZE = 20

interface Search {
  q: string
  email: string
}

function listPath(search: Search, cursor: string | null): string {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) })
  if (search.q !== '') query.set('q', search.q)
  if (search.email !== '') query.set('email', search.email)
  if (cursor !== null) query.set('cursor', cursor)
  return `/v2/users?${query}`
}

type Editing = { mode: 'create' } | { mode: 'edit'; id: number } | { mode: 'delete'; user: User }

/** Search with v2 keyset pages, create, edit with If-Match, delete, export. */
export function UsersPage() {
  const [draft, setDraft] = useState<Search>({ q: '', email: '' })
  const [search, setSearch] = useState<Search>({ q: '', email: '' })
  // The cursors of the pages before this one, so Previous can go back.
  const [cursors, setCursors] = useState<(string | null)[]>([null])
  const cursor = cursors[cursors.length - 1] ?? null
  const { data, error, reload } = useLoad(
    async () => (await call<UserPage>(listPath(search, cursor))).body,
    [search, cursor],
  )
  const [editing, setEditing] = useState<Editing | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const [exportError, setExportError] = useState<unknown>(null)

  const runSearch = (event: Event) => {
    event.preventDefault()
    setSearch({ q: draft.q.trim(), email: draft.email.trim() })
    setCursors([null])
  }
  const exportAs = async (format: 'csv' | 'jsonl') => {
    setExportError(null)
    try {
      const { blob, filename } = await download(`/users/export?format=${format}`)
      saveBlob(blob, filename ?? `roster-users.${format}`)
      setNotice(`Export started (${format === 'csv' ? 'CSV' : 'JSON Lines'}).`)
    } catch (reason) {
      setExportError(reason)
    }
  }
  const done = (text: string) => {
    setEditing(null)
    setNotice(text)
    reload()
  }

  return (
    <>
      <search>
        <form class="toolbar" onSubmit={runSearch}>
          <Field
            label="Name or email contains"
            name="q"
            value={draft.q}
            onInput={(q) => setDraft({ ...draft, q })}
          />
          <Field
            label="Email is exactly"
            name="email"
            type="email"
            value={draft.email}
            onInput={(email) => setDraft({ ...draft, email })}
          />
          <button type="submit">Search</button>
        </form>
      </search>
      <div class="actions">
        <button type="button" class="primary" onClick={() => setEditing({ mode: 'create' })}>
          New user
        </button>
        <button type="button" onClick={() => exportAs('csv')}>
          Export CSV
        </button>
        <button type="button" onClick={() => exportAs('jsonl')}>
          Export JSON Lines
        </button>
      </div>
      <Notice text={notice} />
      <ErrorNote error={error ?? exportError} />
      {data !== null && (
        <>
          <table>
            <caption>
              {data.pagination.total} user{data.pagination.total === 1 ? '' : 's'}
              {search.q !== '' || search.email !== '' ? ' found' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.data.map((user) => (
                <tr key={user.id}>
                  <td>{user.id}</td>
                  <td>{user.name}</td>
                  <td>{user.email}</td>
                  <td>{formatDate(user.created_at)}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      aria-label={`Edit user ${user.id}`}
                      onClick={() => setEditing({ mode: 'edit', id: user.id })}
                    >
                      Edit
                    </button>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Delete user ${user.id}`}
                      onClick={() => setEditing({ mode: 'delete', user })}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            <button
              type="button"
              disabled={cursors.length === 1}
              onClick={() => setCursors(cursors.slice(0, -1))}
            >
              Previous
            </button>
            <span>Page {cursors.length}</span>
            <button
              type="button"
              disabled={data.pagination.next_cursor === null}
              onClick={() => setCursors([...cursors, data.pagination.next_cursor])}
            >
              Next
            </button>
          </nav>
        </>
      )}
      {editing?.mode === 'create' && <CreateUser onClose={() => setEditing(null)} onDone={done} />}
      {editing?.mode === 'edit' && (
        <EditUser id={editing.id} onClose={() => setEditing(null)} onDone={done} />
      )}
      {editing?.mode === 'delete' && (
        <Confirm
          title="Delete this user?"
          action="Delete user"
          onClose={() => setEditing(null)}
          onConfirm={async () => {
            await call(`/users/${editing.user.id}`, { method: 'DELETE' })
            done(`User ${editing.user.id} deleted.`)
          }}
        >
          <p>
            <strong>{editing.user.name}</strong> ({editing.user.email}) will be deleted, with their
            sessions and tokens. This cannot be undone.
          </p>
        </Confirm>
      )}
    </>
  )
}

interface Values {
  name: string
  email: string
  password: string
}

function UserFields(props: { values: Values; onChange: (values: Values) => void; isNew: boolean }) {
  const { values, onChange } = props
  return (
    <>
      <Field
        label="Name"
        name="name"
        value={values.name}
        required
        onInput={(name) => onChange({ ...values, name })}
      />
      <Field
        label="Email"
        name="email"
        type="email"
        value={values.email}
        required
        onInput={(email) => onChange({ ...values, email })}
      />
      <Field
        label={props.isNew ? 'Password (optional)' : 'New password (optional)'}
        name="password"
        type="password"
        autoComplete="new-password"
        value={values.password}
        hint={props.isNew ? '8 to 128 characters.' : 'Leave empty to keep the current one.'}
        onInput={(password) => onChange({ ...values, password })}
      />
    </>
  )
}

function CreateUser(props: { onClose: () => void; onDone: (text: string) => void }) {
  const [values, setValues] = useState<Values>({ name: '', email: '', password: '' })
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const body: Record<string, string> = { name: values.name, email: values.email }
      if (values.password !== '') body.password = values.password
      const created = await call<User>('/users', { method: 'POST', body })
      props.onDone(`User ${created.body.id} created.`)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title="New user" onClose={props.onClose}>
      <form onSubmit={submit}>
        <UserFields values={values} onChange={setValues} isNew />
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary">
            Create user
          </button>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  )
}

/** The record as last read, with the ETag that PATCH sends as If-Match. */
interface Read {
  user: User
  etag: string
}

async function readUser(id: number): Promise<Read> {
  const answer = await call<User>(`/users/${id}`)
  return { user: answer.body, etag: answer.headers.get('etag') ?? '' }
}

function EditUser(props: { id: number; onClose: () => void; onDone: (text: string) => void }) {
  const [read, setRead] = useState<Read | null>(null)
  const [values, setValues] = useState<Values | null>(null)
  // Set after a 412: what the record holds now, for the person to choose.
  const [conflict, setConflict] = useState<Read | null>(null)
  const [error, setError] = useState<unknown>(null)
  const loaded = useLoad(async () => {
    const first = await readUser(props.id)
    setRead(first)
    setValues({ name: first.user.name, email: first.user.email, password: '' })
    return first
  }, [props.id])

  const save = async (etag: string) => {
    if (values === null) return
    const body: Record<string, string> = { name: values.name, email: values.email }
    if (values.password !== '') body.password = values.password
    try {
      await call(`/users/${props.id}`, {
        method: 'PATCH',
        body,
        headers: { 'content-type': 'application/merge-patch+json', 'if-match': etag },
      })
      props.onDone(`User ${props.id} saved.`)
    } catch (reason) {
      if (reason instanceof ApiError && reason.status === 412) {
        setError(null)
        setConflict(await readUser(props.id))
        return
      }
      setError(reason)
    }
  }
  const submit = (event: Event) => {
    event.preventDefault()
    if (read !== null) void save(read.etag)
  }
  const takeTheirs = () => {
    if (conflict === null) return
    setRead(conflict)
    setValues({ name: conflict.user.name, email: conflict.user.email, password: '' })
    setConflict(null)
  }

  return (
    <Dialog title={`Edit user ${props.id}`} onClose={props.onClose}>
      <ErrorNote error={loaded.error} />
      {values !== null && conflict === null && (
        <form onSubmit={submit}>
          <UserFields values={values} onChange={setValues} isNew={false} />
          <ErrorNote error={error} />
          <div class="actions">
            <button type="submit" class="primary">
              Save
            </button>
            <button type="button" onClick={props.onClose}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {values !== null && conflict !== null && (
        <div class="conflict" role="alert">
          <p>Someone else changed this user while you were editing. Choose which values to keep.</p>
          <table>
            <caption>Your changes and the values saved now</caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Yours</th>
                <th scope="col">Saved now</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <th scope="row">Name</th>
                <td>{values.name}</td>
                <td>{conflict.user.name}</td>
              </tr>
              <tr>
                <th scope="row">Email</th>
                <td>{values.email}</td>
                <td>{conflict.user.email}</td>
              </tr>
            </tbody>
          </table>
          <ErrorNote error={error} />
          <div class="actions">
            <button type="button" class="primary" onClick={() => save(conflict.etag)}>
              Save mine over theirs
            </button>
            <button type="button" onClick={takeTheirs}>
              Edit the saved values
            </button>
            <button type="button" onClick={props.onClose}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </Dialog>
  )
}
