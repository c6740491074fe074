import { useState } from 'preact/hooks'
import { call, download, saveBlob } from '../api'
import {
  ColumnHeads,
  Confirm,
  ErrorNote,
  Field,
  formatDate,
  Notice,
  RowAction,
  useLoad,
} from '../components'
import { CreateUser, EditUser, type User } from './user-dialogs'

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
  // The groups' names, to show a user's groups by name (ids for any beyond the first 100).
  const groups = useLoad(
    async () => (await call<{ data: { id: number; name: string }[] }>('/groups?limit=100')).body,
    [],
  )
  const groupNames = new Map((groups.data?.data ?? []).map((group) => [group.id, group.name]))
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
            <ColumnHeads
              names={[
                'Id',
                'Name',
                'Email',
                'Verified',
                'Role',
                'Status',
                'Groups',
                'Created',
                'Actions',
              ]}
            />
            <tbody>
              {data.data.map((user) => (
                <tr key={user.id}>
                  <td>{user.id}</td>
                  <td>{user.name}</td>
                  <td>{user.email}</td>
                  <td>
                    {user.email_verified_at === null ? 'no' : formatDate(user.email_verified_at)}
                  </td>
                  <td>{user.role}</td>
                  <td>{user.active ? 'active' : 'deactivated'}</td>
                  <td>
                    {user.groups.length === 0
                      ? '—'
                      : user.groups.map((id) => groupNames.get(id) ?? `#${id}`).join(', ')}
                  </td>
                  <td>{formatDate(user.created_at)}</td>
                  <td class="row-actions">
                    <RowAction
                      text="Edit"
                      label={`Edit user ${user.id}`}
                      onClick={() => setEditing({ mode: 'edit', id: user.id })}
                    />
                    <RowAction
                      text="Delete"
                      label={`Delete user ${user.id}`}
                      danger
                      onClick={() => setEditing({ mode: 'delete', user })}
                    />
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
