import { useState } from 'preact/hooks'
import { ApiError, call, problemWith, session } from './api'
import { ErrorNote, Field } from './components'
import { passkeysSupported, signWithPasskey } from './passkeys'

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
      <PasskeySignIn onSignedIn={props.onSignedIn} />
      <KeySignIn onSignedIn={props.onSignedIn} />
    </main>
  )
}

/** What a sign-in answers: the user (signed in), or the second step a TOTP account owes. */
interface SignInAnswer {
  user?: { email: string }
  mfa_required?: true
  mfa_token?: string
}

/**
 * After a sign-in set the session cookie: only an admin may use the console (/data answers an
 * admin, and 403 to a member, who is signed out again).
 */
async function becomeAdmin(email: string): Promise<void> {
  try {
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
  session.rememberAdmin(email)
}

function PasswordSignIn(props: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const [mfaToken, setMfaToken] = useState<string | null>(null)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const answer = await call<SignInAnswer>('/login', {
        method: 'POST',
        body: { email: email.trim(), password },
        withCookie: true,
      })
      setPassword('')
      if (answer.body.mfa_required === true && answer.body.mfa_token !== undefined) {
        setMfaToken(answer.body.mfa_token)
        setBusy(false)
        return
      }
      await becomeAdmin(email.trim())
      props.onSignedIn()
    } catch (reason) {
      setError(reason)
      setBusy(false)
    }
  }

  if (mfaToken !== null) {
    return (
      <SecondStep
        mfaToken={mfaToken}
        onSignedIn={async (signedInAs) => {
          await becomeAdmin(signedInAs)
          props.onSignedIn()
        }}
        onRestart={() => setMfaToken(null)}
      />
    )
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

/** The code from the authenticator app, or a recovery code, after a right password. */
function SecondStep(props: {
  mfaToken: string
  onSignedIn: (email: string) => Promise<void>
  onRestart: () => void
}) {
  const [code, setCode] = useState('')
  const [recovery, setRecovery] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const field = recovery ? 'recovery_code' : 'code'
      const answer = await call<SignInAnswer>('/auth/mfa/verify', {
        method: 'POST',
        body: { mfa_token: props.mfaToken, [field]: code.trim() },
        withCookie: true,
      })
      await props.onSignedIn(answer.body.user?.email ?? '')
    } catch (reason) {
      setError(reason)
      setBusy(false)
    }
  }
  return (
    <form onSubmit={submit} aria-labelledby="second-step">
      <h2 id="second-step">Two-factor sign-in</h2>
      <Field
        label={recovery ? 'Recovery code' : 'Code from your authenticator app'}
        name="code"
        autoComplete="one-time-code"
        value={code}
        required
        onInput={setCode}
        error={problemWith(error, recovery ? 'recovery_code' : 'code')}
      />
      <ErrorNote error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          Verify
        </button>
        <button type="button" onClick={() => setRecovery(!recovery)}>
          {recovery ? 'Use the app’s code' : 'Use a recovery code'}
        </button>
        <button type="button" onClick={props.onRestart}>
          Start again
        </button>
      </div>
    </form>
  )
}

/** A passkey this browser or a phone holds: no email, no password (discoverable credentials). */
function PasskeySignIn(props: { onSignedIn: () => void }) {
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  if (!passkeysSupported()) return null
  const start = async () => {
    setBusy(true)
    setError(null)
    try {
      const options = await call('/auth/passkeys/login/options', { method: 'POST' })
      const assertion = await signWithPasskey(options.body)
      const answer = await call<SignInAnswer>('/auth/passkeys/login/verify', {
        method: 'POST',
        body: assertion,
        withCookie: true,
      })
      await becomeAdmin(answer.body.user?.email ?? '')
      props.onSignedIn()
    } catch (reason) {
      setError(reason)
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="passkey-sign-in">
      <h2 id="passkey-sign-in">Or sign in with a passkey</h2>
      <ErrorNote error={error} />
      <button type="button" disabled={busy} onClick={start}>
        Sign in with a passkey
      </button>
    </section>
  )
}
