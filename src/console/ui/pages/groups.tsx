import { useState } from 'preact/hooks'
import { call, problemWith } from '../api'
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
  SubmitOrCancel,
  useChronologicalView,
  useLoad,
} from '../components'
import type { User } from './user-dialogs'

interface Group {
  id: number
  name: string
  description: string | null
  members: number[]
  created_at: string
  updated_at: string
}

interface GroupPage {
  data: Group[]
  pagination: OffsetPage
}

type Open = { mode: 'create' } | { mode: 'members'; id: number } | { mode: 'delete'; group: Group }

/** List, create, delete groups, and put users in them or take them out. */
export function GroupsPage() {
  const { offset, limit, setOffset, setLimit, sort, sortParam, sorting } = useChronologicalView(
    'created',
    'Created',
    {},
  )
  const { data, error, reload } = useLoad(
    async () => (await call<GroupPage>(`/groups?limit=${limit}&offset=${offset}${sortParam}`)).body,
    [offset, limit, sort],
  )
  const [open, setOpen] = useState<Open | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const done = (text: string) => {
    setOpen(null)
    setNotice(text)
    reload()
  }

  return (
    <>
      <div class="actions">
        <button type="button" class="primary" onClick={() => setOpen({ mode: 'create' })}>
          New group
        </button>
      </div>
      <Notice text={notice} />
      <ErrorNote error={error} />
      {data !== null && (
        <>
          <ListTable
            sorting={sorting}
            caption={
              <>
                {data.pagination.total} group{data.pagination.total === 1 ? '' : 's'}
              </>
            }
            columns={['Id', 'Name', 'Description', 'Members', 'Created', 'Actions']}
          >
            {data.data.map((group) => (
              <tr key={group.id}>
                <td>{group.id}</td>
                <td>{group.name}</td>
                <td>{group.description ?? '—'}</td>
                <td>{group.members.length}</td>
                <td>{formatDate(group.created_at)}</td>
                <td class="row-actions">
                  <RowAction
                    text="Members"
                    label={`Members of ${group.name}`}
                    onClick={() => setOpen({ mode: 'members', id: group.id })}
                  />
                  <RowAction
                    text="Delete"
                    label={`Delete group ${group.name}`}
                    danger
                    onClick={() => setOpen({ mode: 'delete', group })}
                  />
                </td>
              </tr>
            ))}
          </ListTable>
          <Pager page={data.pagination} onOffset={setOffset} onLimit={setLimit} />
        </>
      )}
      {open?.mode === 'create' && <CreateGroup onClose={() => setOpen(null)} onDone={done} />}
      {open?.mode === 'members' && (
        <Members
          id={open.id}
          onClose={() => {
            setOpen(null)
            reload()
          }}
        />
      )}
      {open?.mode === 'delete' && (
        <Confirm
          title="Delete this group?"
          action="Delete group"
          onClose={() => setOpen(null)}
          onConfirm={async () => {
            await call(`/groups/${open.group.id}`, { method: 'DELETE' })
            done(`Group ${open.group.name} deleted.`)
          }}
        >
          <p>
            The group <strong>{open.group.name}</strong> will be deleted. Its{' '}
            {open.group.members.length} member{open.group.members.length === 1 ? '' : 's'} stay
            users.
          </p>
        </Confirm>
      )}
    </>
  )
}

function CreateGroup(props: { onClose: () => void; onDone: (text: string) => void }) {
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const body = { name, description: description.trim() === '' ? null : description }
      const created = await call<Group>('/groups', { method: 'POST', body })
      props.onDone(`Group ${created.body.name} created.`)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title="New group" onClose={props.onClose}>
      <form onSubmit={submit}>
        <Field
          label="Name"
          name="group-name"
          value={name}
          required
          onInput={setName}
          hint="Unique, without regard to case."
          error={problemWith(error, 'name')}
        />
        <Field
          label="Description (optional)"
          name="group-description"
          value={description}
          onInput={setDescription}
          error={problemWith(error, 'description')}
        />
        <ErrorNote error={error} />
        <SubmitOrCancel submit="Create group" onCancel={props.onClose} />
      </form>
    </Dialog>
  )
}

/** The group's members by name; add one by email, take one out. */
function Members(props: { id: number; onClose: () => void }) {
  const [email, setEmail] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const {
    data,
    error: loadError,
    reload,
  } = useLoad(async () => {
    const group = (await call<Group>(`/groups/${props.id}`)).body
    const users = await Promise.all(
      group.members.map(async (id) => (await call<User>(`/users/${id}`)).body),
    )
    return { group, users }
  }, [props.id])

  const add = async (event: Event) => {
    event.preventDefault()
    setError(null)
    try {
      const query = new URLSearchParams({ email: email.trim(), limit: '1' })
      const found = (await call<{ data: User[] }>(`/v2/users?${query}`)).body.data[0]
      if (found === undefined) {
        setError(new Error(`No user has the email ${email.trim()}.`))
        return
      }
      await call(`/groups/${props.id}/members/${found.id}`, { method: 'PUT' })
      setEmail('')
      setNotice(`${found.name} added.`)
      reload()
    } catch (reason) {
      setError(reason)
    }
  }
  const remove = async (user: User) => {
    setError(null)
    try {
      await call(`/groups/${props.id}/members/${user.id}`, { method: 'DELETE' })
      setNotice(`${user.name} taken out.`)
      reload()
    } catch (reason) {
      setError(reason)
    }
  }

  return (
    <Dialog title={`Members of ${data?.group.name ?? `group ${props.id}`}`} onClose={props.onClose}>
      <ErrorNote error={loadError} />
      {data !== null && (
        <ListTable
          caption={
            <>
              {data.users.length} member{data.users.length === 1 ? '' : 's'}
            </>
          }
          columns={['Id', 'Name', 'Email', 'Actions']}
        >
          {data.users.map((user) => (
            <tr key={user.id}>
              <td>{user.id}</td>
              <td>{user.name}</td>
              <td>{user.email}</td>
              <td class="row-actions">
                <RowAction
                  text="Take out"
                  label={`Take out ${user.name}`}
                  danger
                  onClick={() => remove(user)}
                />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      <form class="toolbar" onSubmit={add}>
        <Field
          label="Add a user by email"
          name="member-email"
          type="email"
          value={email}
          required
          onInput={setEmail}
        />
        <button type="submit">Add</button>
      </form>
      <Notice text={notice} />
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Dialog>
  )
}
