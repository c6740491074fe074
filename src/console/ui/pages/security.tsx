import { useState } from 'preact/hooks'
import { call, session } from '../api'
import {
  Confirm,
  Dialog,
  ErrorNote,
  Field,
  formatDate,
  ListTable,
  Notice,
  RowAction,
  useLoad,
} from '../components'
import { createPasskey, passkeysSupported } from '../passkeys'
import { QrCode } from '../qr'

interface Passkey {
  id: number
  name: string
  created_at: string
  last_used_at: string | null
  backed_up: boolean
  flagged_at: string | null
}

export interface Factors {
  totp: boolean
  passkeys: Passkey[]
  recovery_codes_left: number
}

interface Enrolment {
  secret: string
  otpauth_url: string
}

/**
 * The signed-in admin's own sign-in factors (CONTRACT section 15): passkeys, TOTP with its QR
 * code, and recovery codes. Changing them needs a sign-in within 5 minutes, or the password
 * typed in the field at the top (roster answers 403 REAUTHENTICATION_REQUIRED otherwise).
 */
export function SecurityPage() {
  if (session.admin() === null) {
    return (
      <p>
        The console is signed in with an API key, which has no passkeys or second factor of its own.
        Sign in with an admin’s email and password to manage them here.
      </p>
    )
  }
  return <OwnFactors />
}

function OwnFactors() {
  const [version, setVersion] = useState(0)
  const [password, setPassword] = useState('')
  const [notice, setNotice] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null)
  const [codes, setCodes] = useState<string[] | null>(null)
  const [removing, setRemoving] = useState<Passkey | null>(null)
  const loaded = useLoad(async () => (await call<Factors>('/me/factors')).body, [version])
  const factors = loaded.data ?? undefined
  const stepUp = () => (password === '' ? {} : { current_password: password })
  const done = (text: string) => {
    setNotice(text)
    setError(null)
    setVersion((value) => value + 1)
  }
  const attempt = async (work: () => Promise<void>) => {
    setError(null)
    setNotice(null)
    try {
      await work()
    } catch (reason) {
      setError(reason)
    }
  }

  const addPasskey = () =>
    attempt(async () => {
      const options = await call('/auth/passkeys/register/options', {
        method: 'POST',
        body: stepUp(),
      })
      const credential = await createPasskey(options.body)
      const name = `Passkey ${(factors?.passkeys.length ?? 0) + 1}`
      await call('/auth/passkeys/register/verify', {
        method: 'POST',
        body: { ...credential, name },
      })
      done(`${name} added: it signs you in without a password.`)
    })
  const startTotp = () =>
    attempt(async () => {
      const answer = await call<Enrolment>('/auth/totp/enroll', { method: 'POST', body: stepUp() })
      setEnrolment(answer.body)
    })
  const turnTotpOff = () =>
    attempt(async () => {
      await call('/auth/totp', { method: 'DELETE', body: stepUp() })
      done('Two-factor sign-in is off; the recovery codes no longer work.')
    })
  const newCodes = () =>
    attempt(async () => {
      const answer = await call<{ recovery_codes: string[] }>('/auth/recovery-codes', {
        method: 'POST',
        body: stepUp(),
      })
      setCodes(answer.body.recovery_codes)
      done('New recovery codes made; the old ones no longer work.')
    })

  return (
    <>
      <p>
        How you sign in to roster. Adding or removing a factor needs a sign-in within the last 5
        minutes, or your current password here.
      </p>
      <Field
        label="Current password"
        name="current_password"
        type="password"
        autoComplete="current-password"
        value={password}
        onInput={setPassword}
        hint="Needed only when you signed in more than 5 minutes ago."
      />
      <Notice text={notice} />
      <ErrorNote error={error ?? loaded.error} />
      <section aria-labelledby="passkeys-heading">
        <h2 id="passkeys-heading">Passkeys</h2>
        {!passkeysSupported() && <p>This browser cannot use passkeys on this address.</p>}
        {factors !== undefined && factors.passkeys.length === 0 && <p>No passkeys yet.</p>}
        {factors !== undefined && factors.passkeys.length > 0 && (
          <ListTable
            caption={<>Your passkeys</>}
            columns={['Name', 'Added', 'Last used', 'Status', 'Actions']}
          >
            {factors.passkeys.map((passkey) => (
              <tr key={passkey.id}>
                <td>{passkey.name}</td>
                <td>{formatDate(passkey.created_at)}</td>
                <td>{formatDate(passkey.last_used_at)}</td>
                <td>
                  {passkey.flagged_at !== null
                    ? 'Refused: looks cloned'
                    : passkey.backed_up
                      ? 'Synced'
                      : 'On one device'}
                </td>
                <td>
                  <RowAction
                    text="Delete"
                    label={`Delete passkey ${passkey.name}`}
                    onClick={() => setRemoving(passkey)}
                  />
                </td>
              </tr>
            ))}
          </ListTable>
        )}
        <button type="button" class="primary" onClick={addPasskey}>
          Add a passkey
        </button>
      </section>
      <section aria-labelledby="totp-heading">
        <h2 id="totp-heading">Authenticator app (TOTP)</h2>
        {factors?.totp === true ? (
          <>
            <p>
              On: signing in with a password asks for the app’s 6-digit code.{' '}
              {factors.recovery_codes_left} of 10 recovery codes unused.
            </p>
            <div class="actions">
              <button type="button" onClick={newCodes}>
                New recovery codes
              </button>
              <button type="button" class="danger" onClick={turnTotpOff}>
                Turn off
              </button>
            </div>
          </>
        ) : (
          <>
            <p>Off.</p>
            <button type="button" class="primary" onClick={startTotp}>
              Set up an authenticator app
            </button>
          </>
        )}
      </section>
      {enrolment !== null && (
        <ConfirmTotp
          enrolment={enrolment}
          onClose={() => setEnrolment(null)}
          onConfirmed={(recoveryCodes) => {
            setEnrolment(null)
            setCodes(recoveryCodes)
            done('Two-factor sign-in is on.')
          }}
        />
      )}
      {codes !== null && <RecoveryCodes codes={codes} onClose={() => setCodes(null)} />}
      {removing !== null && (
        <Confirm
          title={`Delete passkey ${removing.name}?`}
          action="Delete"
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await call(`/me/passkeys/${removing.id}`, { method: 'DELETE', body: stepUp() })
            done(`${removing.name} deleted.`)
          }}
        >
          <p>It will not sign you in any more.</p>
        </Confirm>
      )}
    </>
  )
}

function ConfirmTotp(props: {
  enrolment: Enrolment
  onClose: () => void
  onConfirmed: (codes: string[]) => void
}) {
  const [code, setCode] = useState('')
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      const answer = await call<{ recovery_codes: string[] }>('/auth/totp/confirm', {
        method: 'POST',
        body: { code: code.trim() },
      })
      props.onConfirmed(answer.body.recovery_codes)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title="Set up an authenticator app" onClose={props.onClose}>
      <p>Scan this code with the app, or type the key into it, then enter the code it shows.</p>
      <QrCode text={props.enrolment.otpauth_url} label="QR code of the authenticator key" />
      <p>
        Key: <code class="secret">{props.enrolment.secret}</code>
      </p>
      <form onSubmit={submit}>
        <Field
          label="Code from the app"
          name="code"
          autoComplete="one-time-code"
          value={code}
          required
          onInput={setCode}
        />
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary">
            Turn on
          </button>
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  )
}

function RecoveryCodes(props: { codes: string[]; onClose: () => void }) {
  return (
    <Dialog title="Your recovery codes" onClose={props.onClose}>
      <p>
        Shown this once. Keep them somewhere safe: each signs you in once in place of the app’s
        code.
      </p>
      <ul class="recovery-codes">
        {props.codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ul>
      <div class="actions">
        <button type="button" class="primary" onClick={props.onClose}>
          I have kept them
        </button>
      </div>
    </Dialog>
  )
}
