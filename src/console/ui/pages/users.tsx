import { useEffect, useState } from 'preact/hooks'
import { call, download, saveBlob } from '../api'
import {
  Confirm,
  ErrorNote,
  Field,
  formatDate,
  ListState,
  ListTable,
  Notice,
  Pager,
  RowAction,
  useLoad,
  useOffsetView,
} from '../components'
import { CreateUser, EditUser, type User } from './user-dialogs'

interface UserPage {
  data: User[]
  pagination: { limit: number; offset: number; total: number }
}

/** The orders the API offers (GET /v2/users `sort`); the URL's view may hold anything. */
const SORTS = ['id', '-id', 'name', '-name', 'email', '-email']
const SORTABLE = { Id: 'id', Name: 'name', Email: 'email' } as const

/** The API path that reads a view (#/users?q=ada&sort=-name&page=2&size=50). */
function listPath(
  view: { q: string; email: string; sort: string },
  offset: number,
  limit: number,
): string {
  const query = new URLSearchParams({ limit: String(limit), offset: String(offset) })
  if (view.q !== '') query.set('q', view.q)
  if (view.email !== '') query.set('email', view.email)
  if (view.sort !== 'id') query.set('sort', view.sort)
  return `/v2/users?${query}`
}

type Editing = { mode: 'create' } | { mode: 'edit'; id: number } | { mode: 'delete'; user: User }

/** Search, sort and pages (kept in the URL), create, edit with If-Match, delete, export. */
export function UsersPage() {
  const list = useOffsetView({ q: '', email: '', sort: 'id' })
  const { offset, limit } = list
  // A hand-edited or old link with an unknown sort shows the default order, not an error.
  const view = { ...list.view, sort: SORTS.includes(list.view.sort) ? list.view.sort : 'id' }
  const [draft, setDraft] = useState({ q: view.q, email: view.email })
  // Back, Forward or a shared link change the search: the fields show it.
  useEffect(() => setDraft({ q: view.q, email: view.email }), [view.q, view.email])
  const { data, error, loading, reload } = useLoad(
    async () => (await call<UserPage>(listPath(view, offset, limit))).body,
    [view.q, view.email, view.sort, offset, limit],
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
    const changes = { q: draft.q.trim(), email: draft.email.trim() }
    // The same search again reads the list again: it may have changed meanwhile.
    if (changes.q === view.q && changes.email === view.email && offset === 0) reload()
    else list.filter(changes)
  }
  const searched = view.q !== '' || view.email !== ''
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
      <ListState
        loading={loading && data === null}
        empty={data !== null && data.data.length === 0}
        nothing={
          (data?.pagination.total ?? 0) > 0
            ? 'Nothing on this page: the list is shorter now.'
            : searched
              ? 'No user matches this search.'
              : 'No users yet: create the first one.'
        }
      />
      {data !== null && data.data.length > 0 && (
        <ListTable
          caption={
            <>
              {data.pagination.total} user{data.pagination.total === 1 ? '' : 's'}
              {searched ? ' found' : ''}
            </>
          }
          sorting={{
            sort: view.sort,
            keys: SORTABLE,
            onSort: (sort) => list.filter({ sort }),
          }}
          columns={[
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
        >
          {data.data.map((user) => (
            <tr key={user.id}>
              <td>{user.id}</td>
              <td>{user.name}</td>
              <td>{user.email}</td>
              <td>{user.email_verified_at === null ? 'no' : formatDate(user.email_verified_at)}</td>
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
        </ListTable>
      )}
      {data !== null && data.pagination.total > 0 && (
        <Pager page={data.pagination} onOffset={list.setOffset} onLimit={list.setLimit} />
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
