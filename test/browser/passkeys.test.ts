import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import * as OTPAuth from 'otpauth'
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { activate, launchChromium, seriousAxeViolations, typeInto } from '../helpers/browser'

// Passkeys and TOTP through the console in Chromium against the compiled binary, with
// Chromium's own virtual authenticator (CTAP2, internal, resident keys, user verification)
// driven over the DevTools protocol: what a person with a laptop's fingerprint reader does.
// The page is http://localhost:PORT, the relying party roster uses without --public-url.
setDefaultTimeout(120_000)

const PASSWORD = 'an admin passphrase'
/** A laptop's platform authenticator: CTAP2, built in, holds passkeys, verifies its user. */
const VIRTUAL_AUTHENTICATOR = {
  protocol: 'ctap2',
  transport: 'internal',
  hasResidentKey: true,
  hasUserVerification: true,
  isUserVerified: true,
  automaticPresenceSimulation: true,
} as const
const EMAIL = 'root@example.com'

let browser: Browser
let dir: ReturnType<typeof tempDir>
let server: Awaited<ReturnType<typeof startBinary>>
let context: BrowserContext
let page: Page
let cdp: CDPSession
let authenticatorId: string
let origin: string
let recoveryCodes: string[] = []

const alert = () => page.getByRole('alert').first()

async function openSection(title: string) {
  await activate(page, title)
  await page.getByRole('heading', { level: 1, name: title }).waitFor()
}

async function signInWithPassword() {
  await page.getByRole('heading', { name: 'roster console' }).waitFor()
  await typeInto(page, 'Email', EMAIL)
  await typeInto(page, 'Password', PASSWORD)
  await page.keyboard.press('Enter')
}

/** Signed in: the console shows its sections (the one it showed before, or the overview). */
async function signedInView() {
  await page.getByRole('button', { name: 'Sign out' }).waitFor()
}

async function signOut() {
  await activate(page, 'Sign out')
  await page.getByRole('heading', { name: 'roster console' }).waitFor()
}

async function credentials() {
  return (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials
}

beforeAll(async () => {
  requireBinary()
  browser = await launchChromium()
  dir = tempDir()
  const dataDir = join(dir.path, 'data')
  const made = await runBinary(
    ['users', 'create', '--role', 'admin', '--name', 'Root', '--email', EMAIL, '--password-stdin'],
    { stdin: `${PASSWORD}\n`, env: cleanEnv({ ROSTER_DATA_DIR: dataDir }) },
  )
  expect(made.code).toBe(0)
  server = await startBinary(['--data-dir', dataDir], { env: cleanEnv({}) })
  origin = `http://localhost:${new URL(server.url).port}`
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  page = await context.newPage()
  cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  authenticatorId = (
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: VIRTUAL_AUTHENTICATOR,
    })
  ).authenticatorId
  await page.goto(`${origin}/console`)
})

afterAll(async () => {
  await context?.close()
  await browser?.close()
  await server?.stop()
  dir?.[Symbol.dispose]()
})

describe('passkeys and TOTP in the console, with Chromium’s virtual authenticator', () => {
  test('an admin adds a passkey from the Security page; it is a resident key on the authenticator', async () => {
    await signInWithPassword()
    await signedInView()
    await openSection('Security')
    await activate(page, 'Add a passkey')
    await page.getByRole('cell', { name: 'Passkey 1', exact: true }).waitFor()
    const held = await credentials()
    expect(held).toHaveLength(1)
    expect(held[0]?.isResidentCredential).toBe(true)
    expect(held[0]?.rpId).toBe('localhost')
    expect(await seriousAxeViolations(page)).toEqual([])
  })

  test('TOTP: the QR code and key, a code from an authenticator app, ten recovery codes shown once', async () => {
    await activate(page, 'Set up an authenticator app')
    const dialog = page.getByRole('dialog')
    await dialog.getByRole('img', { name: 'QR code of the authenticator key' }).waitFor()
    const secret = ((await dialog.locator('code').textContent()) ?? '').trim()
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(await seriousAxeViolations(page)).toEqual([])
    const app = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) })
    await typeInto(page, 'Code from the app', app.generate())
    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'Your recovery codes' }).waitFor()
    recoveryCodes = (await page.getByRole('dialog').locator('li code').allTextContents()).map(
      (code) => code.trim(),
    )
    expect(recoveryCodes).toHaveLength(10)
    await activate(page, 'I have kept them')
    await page.getByText('10 of 10 recovery codes unused').waitFor()
  })

  test('signing in with the passkey needs no email or password, and asks for no code', async () => {
    await signOut()
    await activate(page, 'Sign in with a passkey')
    await signedInView()
    expect(await page.evaluate(() => sessionStorage.getItem('roster.console.admin'))).toBe(EMAIL)
  })

  test('an assertion sent twice signs in once: the second is 400 TOKEN_USED', async () => {
    // The page's own fetches, with a real signature from the virtual authenticator.
    const outcome = await page.evaluate(`(async () => {
      const options = await (await fetch('/auth/passkeys/login/options', { method: 'POST' })).json()
      const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options)
      const credential = await navigator.credentials.get({ publicKey })
      const body = JSON.stringify(credential.toJSON())
      const post = async () => {
        const reply = await fetch('/auth/passkeys/login/verify', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        const json = await reply.json()
        return [reply.status, json.error ? json.error.code : 'signed in']
      }
      return [await post(), await post()]
    })()`)
    expect(outcome).toEqual([
      [200, 'signed in'],
      [400, 'TOKEN_USED'],
    ])
  })

  test('a password sign-in asks for the second step; a recovery code finishes it', async () => {
    await signOut()
    await signInWithPassword()
    await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor()
    expect(await seriousAxeViolations(page)).toEqual([])
    await activate(page, 'Use a recovery code')
    await typeInto(page, 'Recovery code', recoveryCodes[0] as string)
    await page.keyboard.press('Enter')
    await signedInView()
  })

  test('with user verification off the authenticator cannot sign in', async () => {
    await signOut()
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false })
    await activate(page, 'Sign in with a passkey')
    await alert().waitFor()
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0)
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true })
  })

  test('from another origin (127.0.0.1, not the relying party) the browser refuses the passkey', async () => {
    const other = await context.newPage()
    const otherCdp = await context.newCDPSession(other)
    await otherCdp.send('WebAuthn.enable')
    await otherCdp.send('WebAuthn.addVirtualAuthenticator', {
      options: VIRTUAL_AUTHENTICATOR,
    })
    await other.goto(`${server.url}/console`)
    await other.getByRole('button', { name: 'Sign in with a passkey' }).click()
    await other.getByRole('alert').first().waitFor()
    expect(await other.getByRole('button', { name: 'Sign out' }).count()).toBe(0)
    await other.close()
  })

  test('a deleted passkey signs nobody in', async () => {
    await signInWithPassword()
    await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor()
    await activate(page, 'Use a recovery code')
    await typeInto(page, 'Recovery code', recoveryCodes[1] as string)
    await page.keyboard.press('Enter')
    await signedInView()
    await openSection('Security')
    await activate(page, 'Delete passkey Passkey 1')
    await activate(page, 'Delete')
    await page.getByText('No passkeys yet.').waitFor()
    await signOut()
    await activate(page, 'Sign in with a passkey')
    await page.getByRole('alert').filter({ hasText: 'not registered with roster' }).waitFor()
  })
})
