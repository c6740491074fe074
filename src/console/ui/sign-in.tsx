import { useState } from 'preact/hooks'
import { ApiError, call, problemWith, session } from './api'
import { ErrorNote, Field } from './components'

/**
 * Two ways in: an admin's email and password (roster sets its session cookie; the console
 * then checks the account may act as an admin), or an API key, tried on GET /data before it is
 * kept, so a wrong or revoked key is told apart from a server that cannot be reached.
 */
export function SignIn(props: { onSignedIn: () => void; reason: string | null }) {
  return (
    <main id="main" class="sign-in">
      <h1>roster console</h1>
      {props.reason !== null && <p class="notice">{props.reason}</p>}
      <PasswordSignIn onSignedIn={props.onSignedIn} />
      <KeySignIn onSignedIn={props.onSignedIn} />
    </main>
  )
}

function PasswordSignIn(props: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await call('/login', {
        method: 'POST',
        body: { email: email.trim(), password },
        withCookie: true,
      })
      try {
        // Only an admin may use the console: /data answers an admin, and 403 to a member.
        await call('/data', { withCookie: true })
      } catch (reason) {
        await call('/logout', { method: 'POST', withCookie: true }).catch(() => {})
        throw reason instanceof ApiError && reason.status === 403
          ? new ApiError(
              403,
              reason.code,
              'This account is not an admin. Ask an admin to promote it, or sign in with an API key.',
              reason.requestId,
            )
          : reason
      }
      session.rememberAdmin(email.trim())
      setPassword('')
      props.onSignedIn()
    } catch (reason) {
      setError(reason)
      setBusy(false)
    }
  }

  return (
    <form onSubmit={submit} aria-labelledby="password-sign-in">
      <h2 id="password-sign-in">Sign in as an admin</h2>
      <Field
        label="Email"
        name="email"
        type="email"
        autoComplete="username"
        value={email}
        required
        onInput={setEmail}
        error={problemWith(error, 'email')}
      />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="current-password"
        value={password}
        required
        onInput={setPassword}
        error={problemWith(error, 'password')}
      />
      <ErrorNote error={error} />
      <button type="submit" class="primary" disabled={busy}>
        Sign in
      </button>
    </form>
  )
}

function KeySignIn(props: { onSignedIn: () => void }) {
  const [key, setKey] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    const candidate = key.trim()
    if (candidate === '') {
      setError(new Error('Paste an API key first.'))
      return
    }
    setBusy(true)
    try {
      await call('/data', { key: candidate })
      session.remember(candidate)
      setKey('')
      props.onSignedIn()
    } catch (reason) {
      setError(
        reason instanceof ApiError && reason.status === 401
          ? new ApiError(
              401,
              reason.code,
              'That API key was not accepted: it is wrong or has been revoked.',
              reason.requestId,
            )
          : reason,
      )
      setBusy(false)
    }
  }

  return (
    <form onSubmit={submit} aria-labelledby="key-sign-in">
      <h2 id="key-sign-in">Or sign in with an API key</h2>
      <p class="field">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={key}
          aria-describedby="api-key-hint"
          onInput={(event) => setKey((event.currentTarget as HTMLInputElement).value)}
        />
        <small id="api-key-hint" class="hint">
          Create one with <code>roster keys create --name console</code>. It stays in this tab only
          and is forgotten when the tab closes.
        </small>
      </p>
      <ErrorNote error={error} />
      <button type="submit" disabled={busy}>
        Sign in with the key
      </button>
    </form>
  )
}
