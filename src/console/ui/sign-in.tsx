import { useState } from 'preact/hooks'
import { ApiError, call, session } from './api'
import { ErrorNote } from './components'

/**
 * Asks for an API key and tries it on GET /data before keeping it, so a wrong or revoked key
 * is told apart from a server that cannot be reached.
 */
export function SignIn(props: { onSignedIn: () => void; reason: string | null }) {
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
    <main id="main" class="sign-in">
      <h1>roster console</h1>
      {props.reason !== null && <p class="notice">{props.reason}</p>}
      <form onSubmit={submit}>
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
            Create one with <code>roster keys create --name console</code>. It stays in this tab
            only and is forgotten when the tab closes.
          </small>
        </p>
        <ErrorNote error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  )
}
