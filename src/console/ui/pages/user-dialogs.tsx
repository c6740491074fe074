import { useState } from 'preact/hooks'
import { ApiError, call, problemWith } from '../api'
import {
  Confirm,
  Dialog,
  ErrorNote,
  Field,
  ListTable,
  SubmitOrCancel,
  useLoad,
} from '../components'

export interface User {
  id: number
  name: string
  email: string
  /** What the user signs in with besides its email (SCIM's userName). */
  username: string
  /** False: deactivated, it may not sign in. */
  active: boolean
  created_at: string
  updated_at: string
  role: 'member' | 'admin'
  email_verified_at: string | null
  groups: number[]
}

interface Values {
  name: string
  email: string
  /** Empty: the email (a new user), or left as it is. */
  username: string
  password: string
  role: 'member' | 'admin'
  active: boolean
}

function UserFields(props: {
  values: Values
  onChange: (values: Values) => void
  isNew: boolean
  error: unknown
}) {
  const { values, onChange, error } = props
  return (
    <>
      <Field
        label="Name"
        name="name"
        value={values.name}
        required
        onInput={(name) => onChange({ ...values, name })}
        error={problemWith(error, 'name')}
      />
      <Field
        label="Email"
        name="email"
        type="email"
        value={values.email}
        required
        onInput={(email) => onChange({ ...values, email })}
        error={problemWith(error, 'email')}
      />
      <Field
        label="Login (optional)"
        name="username"
        value={values.username}
        hint="A username to sign in with besides the email (SCIM’s userName). Left empty, it is the email."
        onInput={(username) => onChange({ ...values, username })}
        error={problemWith(error, 'username')}
      />
      <Field
        label={props.isNew ? 'Password (optional)' : 'New password (optional)'}
        name="password"
        type="password"
        autoComplete="new-password"
        value={values.password}
        hint={props.isNew ? '8 to 128 characters.' : 'Leave empty to keep the current one.'}
        onInput={(password) => onChange({ ...values, password })}
        error={problemWith(error, 'password')}
      />
      <p class="field">
        <label for="user-role">Role</label>
        <select
          id="user-role"
          name="role"
          value={values.role}
          aria-describedby="user-role-hint"
          onChange={(event) =>
            onChange({
              ...values,
              role: (event.currentTarget as HTMLSelectElement).value as Values['role'],
            })
          }
        >
          <option value="member">member: its own record only</option>
          <option value="admin">admin: everything, this console included</option>
        </select>
        <small id="user-role-hint" class="hint">
          A new role signs the user out everywhere. The last admin cannot be demoted.
        </small>
        {problemWith(error, 'role') !== undefined && (
          <small class="field-error">{problemWith(error, 'role')}</small>
        )}
      </p>
      {!props.isNew && (
        <p class="field">
          <label>
            <input
              type="checkbox"
              name="active"
              checked={values.active}
              aria-describedby="user-active-hint"
              onChange={(event) =>
                onChange({ ...values, active: (event.currentTarget as HTMLInputElement).checked })
              }
            />{' '}
            Active: may sign in
          </label>
          <small id="user-active-hint" class="hint">
            Deactivating signs the user out everywhere and keeps the record.
          </small>
          {problemWith(error, 'active') !== undefined && (
            <small class="field-error">{problemWith(error, 'active')}</small>
          )}
        </p>
      )}
    </>
  )
}

/** The form's values for a record as read (the password is never shown). */
function valuesOf(user: User): Values {
  return {
    name: user.name,
    email: user.email,
    username: user.username,
    password: '',
    role: user.role,
    active: user.active,
  }
}

/** Creates a user; reports the new id. */
export function CreateUser(props: { onClose: () => void; onDone: (text: string) => void }) {
  const [values, setValues] = useState<Values>({
    name: '',
    email: '',
    username: '',
    password: '',
    role: 'member',
    active: true,
  })
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const body: Record<string, string> = { name: values.name, email: values.email }
      if (values.username !== '') body.username = values.username
      if (values.password !== '') body.password = values.password
      if (values.role !== 'member') body.role = values.role
      const created = await call<User>('/users', { method: 'POST', body })
      props.onDone(`User ${created.body.id} created.`)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title="New user" onClose={props.onClose}>
      <form onSubmit={submit}>
        <UserFields values={values} onChange={setValues} isNew error={error} />
        <ErrorNote error={error} />
        <SubmitOrCancel submit="Create user" onCancel={props.onClose} />
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

/** Where a user came from: made in roster, or provisioned by an identity provider (SCIM). */
interface Provisioning {
  provisioned: boolean
  external_id: string | null
}

function Provenance(props: { provisioning: Provisioning | null; user: User }) {
  const { provisioning, user } = props
  if (provisioning === null) return null
  return (
    <p class="provenance">
      {provisioning.provisioned
        ? `Provisioned through SCIM${provisioning.external_id === null ? '' : `, externalId ${provisioning.external_id}`}.`
        : 'Made in roster.'}{' '}
      Signs in as {user.username}
      {user.active ? '.' : '; deactivated: it cannot sign in.'}
    </p>
  )
}

interface FactorSummary {
  totp: boolean
  passkeys: unknown[]
  recovery_codes_left: number
}

/** Which second factors a user has, and the admin's reset for one who lost them. */
function SignInFactors(props: { id: number; onDone: (text: string) => void }) {
  const [confirming, setConfirming] = useState(false)
  const [round, setRound] = useState(0)
  const loaded = useLoad(
    async () => (await call<FactorSummary>(`/users/${props.id}/factors`)).body,
    [props.id, round],
  )
  const factors = loaded.data
  if (factors === null) return <ErrorNote error={loaded.error} />
  const parts = [
    factors.totp
      ? `authenticator app on (${factors.recovery_codes_left} recovery codes left)`
      : null,
    factors.passkeys.length === 0
      ? null
      : `${factors.passkeys.length} passkey${factors.passkeys.length === 1 ? '' : 's'}`,
  ].filter((part) => part !== null)
  return (
    <div class="factors">
      <p>
        Sign-in factors: {parts.length === 0 ? 'password or mailed links only' : parts.join(', ')}.
      </p>
      {parts.length > 0 && (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Reset factors
        </button>
      )}
      {confirming && (
        <Confirm
          title={`Reset the sign-in factors of user ${props.id}?`}
          action="Reset factors"
          onClose={() => setConfirming(false)}
          onConfirm={async () => {
            await call(`/users/${props.id}/factors`, { method: 'DELETE' })
            setRound((value) => value + 1)
            props.onDone(`The passkeys and authenticator app of user ${props.id} were removed.`)
          }}
        >
          <p>
            Every passkey, the authenticator app and the recovery codes of this user are removed. It
            then signs in with its password or a mailed link.
          </p>
        </Confirm>
      )}
    </div>
  )
}

/**
 * Edits a user with If-Match; on 412 shows the saved values beside the person's and lets them
 * choose.
 */
export function EditUser(props: {
  id: number
  onClose: () => void
  onDone: (text: string) => void
}) {
  const [read, setRead] = useState<Read | null>(null)
  const [values, setValues] = useState<Values | null>(null)
  // Set after a 412: what the record holds now, for the person to choose.
  const [conflict, setConflict] = useState<Read | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [provisioning, setProvisioning] = useState<Provisioning | null>(null)
  const loaded = useLoad(async () => {
    const first = await readUser(props.id)
    setRead(first)
    setValues(valuesOf(first.user))
    setProvisioning((await call<Provisioning>(`/users/${props.id}/provisioning`)).body)
    return first
  }, [props.id])

  const save = async (etag: string) => {
    if (values === null) return
    const body: Record<string, string | boolean> = { name: values.name, email: values.email }
    if (values.password !== '') body.password = values.password
    if (read !== null && values.role !== read.user.role) body.role = values.role
    if (read !== null && values.username !== '' && values.username !== read.user.username) {
      body.username = values.username
    }
    if (read !== null && values.active !== read.user.active) body.active = values.active
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
    setValues(valuesOf(conflict.user))
    setConflict(null)
  }

  return (
    <Dialog title={`Edit user ${props.id}`} onClose={props.onClose}>
      <ErrorNote error={loaded.error} />
      {read !== null && <Provenance provisioning={provisioning} user={read.user} />}
      {read !== null && conflict === null && <SignInFactors id={props.id} onDone={props.onDone} />}
      {values !== null && conflict === null && (
        <form onSubmit={submit}>
          <UserFields values={values} onChange={setValues} isNew={false} error={error} />
          <ErrorNote error={error} />
          <SubmitOrCancel submit="Save" onCancel={props.onClose} />
        </form>
      )}
      {read !== null && conflict === null && (
        <MailActions user={read.user} onDone={props.onDone} onError={setError} />
      )}
      {values !== null && conflict !== null && (
        <div class="conflict" role="alert">
          <p>Someone else changed this user while you were editing. Choose which values to keep.</p>
          <ListTable
            caption={<>Your changes and the values saved now</>}
            columns={['Field', 'Yours', 'Saved now']}
          >
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
          </ListTable>
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

/**
 * Mail for the user: an invitation (it sets its password) or a password-reset link. The
 * outbox page shows what became of it.
 */
function MailActions(props: {
  user: User
  onDone: (text: string) => void
  onError: (error: unknown) => void
}) {
  const { user } = props
  const send = async (kind: 'invite' | 'reset') => {
    try {
      if (kind === 'invite') await call(`/users/${user.id}/invite`, { method: 'POST' })
      else
        await call('/auth/password-reset/request', { method: 'POST', body: { email: user.email } })
      props.onDone(
        `${kind === 'invite' ? 'An invitation' : 'A password-reset link'} is on its way to ${user.email}.`,
      )
    } catch (reason) {
      props.onError(reason)
    }
  }
  return (
    <section class="mail-actions" aria-label="Mail">
      <p>
        Address {user.email_verified_at === null ? 'not verified yet' : 'verified'}. Mail the user:
      </p>
      <div class="actions">
        <button type="button" onClick={() => send('invite')}>
          Send an invitation
        </button>
        <button type="button" onClick={() => send('reset')}>
          Send a password-reset link
        </button>
      </div>
    </section>
  )
}
