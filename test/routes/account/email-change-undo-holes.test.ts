import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp, type TestApp } from '../../helpers/app'
import { PASSWORD, signedIn } from '../../helpers/auth'
import { SoftAuthenticator } from '../../helpers/authenticator'
import { startSmtpServer } from '../../helpers/smtp'

// An attacker's review of the undo link (CONTRACT section 17): a thief who holds the account's
// credential moves its address away; the old address's undo link must give the account back
// and end everything the thief holds.

const PUBLIC_URL = 'https://roster.example'
const CHANGED = 'Your email address was changed'
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
/** The ceremony as a browser on the public URL runs it. */
const ON_ROSTER = { origin: PUBLIC_URL, rpId: 'roster.example' }

async function withMail() {
  const smtp = await startSmtpServer()
  const t = await makeTestApp({
    smtpUrl: smtp.url,
    publicUrl: PUBLIC_URL,
    mailFrom: 'Roster <no-reply@roster.example>',
  })
  const disposeApp = t[Symbol.asyncDispose]
  return Object.assign(t, {
    smtp,
    async [Symbol.asyncDispose]() {
      await disposeApp()
      await smtp[Symbol.asyncDispose]()
    },
  })
}
type MailApp = Awaited<ReturnType<typeof withMail>>

const tokenOf = (link: string | null) => new URL(link as string).searchParams.get('token') as string

/** The next message with this subject to `to`, once it has arrived. */
async function mailTo(t: MailApp, to: string, subject: string) {
  for (let count = 1; ; count++) {
    const found = (await t.smtp.waitFor(count)).find(
      (mail) => mail.to === to && mail.subject === subject,
    )
    if (found !== undefined) return found
  }
}

/** The thief, holding the token and the password, moves the account's address by PATCH. */
async function moved(t: TestApp, userId: number, token: string, email: string) {
  const answer = await t.call('PATCH', `/users/${userId}`, {
    json: { email, current_password: PASSWORD },
    headers: bearer(token),
  })
  expect(answer.status).toBe(200)
}

describe('the undo link of an email change gives the account back (CONTRACT section 17)', () => {
  test('a thief who moves the account twice and follows the second move’s undo link does not take the first undo link away', async () => {
    await using t = await withMail()
    const ada = await signedIn(t)
    await moved(t, ada.userId, ada.token, 'thief@evil.example')
    const victims = await mailTo(t, 'ada@example.com', CHANGED)
    // A second move mails an undo link to the thief's own first address...
    await moved(t, ada.userId, ada.token, 'thief2@evil.example')
    const thiefs = await mailTo(t, 'thief@evil.example', CHANGED)
    // ...which the thief follows at once: the account is back at the thief's address, verified.
    const taken = await t.post('/auth/email-change-undo/confirm', { token: tokenOf(thiefs.link) })
    expect(taken.body.email).toBe('thief@evil.example')

    // The owner's undo link, mailed to the address the account had before any move, must still
    // give the account back; it was ended by the thief's undo.
    const undone = await t.post('/auth/email-change-undo/confirm', {
      token: tokenOf(victims.link),
    })
    expect({ status: undone.status, email: undone.body.email }).toEqual({
      status: 200,
      email: 'ada@example.com',
    })
  })

  test('a thief cannot keep the undo from working by parking another account of its own on the old address', async () => {
    await using t = await withMail()
    const ada = await signedIn(t)
    const mallory = await signedIn(t, 'mallory@evil.example')
    await moved(t, ada.userId, ada.token, 'thief@evil.example')
    const notice = await mailTo(t, 'ada@example.com', CHANGED)
    // The thief's own account tries to take the address by PATCH, which proves no mailbox: it
    // is held for Ada's account while the undo link lives.
    const parked = await t.call('PATCH', `/users/${mallory.userId}`, {
      json: { email: 'ada@example.com', current_password: PASSWORD },
      headers: bearer(mallory.token),
    })
    expect(expectEnvelope(parked, 409, 'CONFLICT').details[0]?.field).toBe('email')

    const undone = await t.post('/auth/email-change-undo/confirm', { token: tokenOf(notice.link) })
    expect({ status: undone.status, email: undone.body.email }).toEqual({
      status: 200,
      email: 'ada@example.com',
    })
  })

  test('a passkey the thief registered before moving the address no longer signs in once the move is undone', async () => {
    await using t = await withMail()
    const ada = await signedIn(t)
    // The stolen token is fresh (a sign-in within 5 minutes): the thief adds its own passkey.
    const thiefsKey = await SoftAuthenticator.create()
    const options = await t.post(
      '/auth/passkeys/register/options',
      {},
      { headers: bearer(ada.token) },
    )
    expect(options.status).toBe(200)
    const registered = await t.post(
      '/auth/passkeys/register/verify',
      { ...thiefsKey.register(options.body, ON_ROSTER), name: 'Thief' },
      { headers: bearer(ada.token) },
    )
    expect(registered.status).toBe(201)
    await moved(t, ada.userId, ada.token, 'thief@evil.example')
    const notice = await mailTo(t, 'ada@example.com', CHANGED)

    const undone = await t.post('/auth/email-change-undo/confirm', { token: tokenOf(notice.link) })
    expect(undone.body.email).toBe('ada@example.com')
    expectEnvelope(await t.get('/me', { headers: bearer(ada.token) }), 401, 'UNAUTHORIZED')

    // "Ends every session": the thief's passkey is a way back in that the undo must end too.
    const loginOptions = await t.post('/auth/passkeys/login/options', {})
    const back = await t.post(
      '/auth/passkeys/login/verify',
      await thiefsKey.assert(loginOptions.body, ON_ROSTER),
    )
    expectEnvelope(back, 401, 'INVALID_CREDENTIALS')
  })
})
