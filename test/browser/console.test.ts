import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext, Download, Locator, Page } from 'playwright-core'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import {
  activate,
  launchChromium,
  type PageWatch,
  seriousAxeViolations,
  tabTo,
  typeInto,
  watchPage,
} from '../helpers/browser'
import { multipartBody, multipartType } from '../helpers/multipart'
import { startReceiver, verifyDelivery } from '../helpers/receiver'
import { event, STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

// Drives the console in Chromium against the compiled binary with the keyboard only: Tab to a
// control by its accessible name, then Enter or typing, as someone without a mouse would. The
// stages share one page and run in order.
setDefaultTimeout(120_000)

const HOSTILE_NAME = '<img src=x onerror=alert(1)>'
// Sent as a quoted-string with escaped quotes, so the stored name starts with `">`. (A `/`
// would be taken as a path separator and cut away.)
const HOSTILE_FILENAME = '"><img src=z onerror=alert(2)>.txt'
const HOSTILE_DESCRIPTION = '<svg onload=alert(3)>'
const HOSTILE_TYPE = '<img src=y onerror=alert(4)>.happened'
const ADMIN_PASSWORD = 'an admin passphrase'
/** ROSTER_UPDATE_SCREENSHOTS=1 rewrites the screenshots in docs/images from this run. */
const SCREENSHOTS = process.env.ROSTER_UPDATE_SCREENSHOTS === '1'
const SCREENSHOT_DIR = join(import.meta.dir, '../../docs/images')

let browser: Browser
let dir: ReturnType<typeof tempDir>
let server: Awaited<ReturnType<typeof startBinary>>
let dataDir: string
let key: string
let context: BrowserContext
let page: Page
let watch: PageWatch
let spareKey: string | null = null
let receiver: Awaited<ReturnType<typeof startReceiver>>

/** A key for the test's own checks (the console's keys get revoked along the way). */
const adminKey = () => spareKey as string

const api = (path: string, init: RequestInit = {}, withKey = key) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: { 'x-api-key': withKey, ...(init.headers as Record<string, string> | undefined) },
  })

async function createKey(name: string): Promise<string> {
  const created = await runBinary(['keys', 'create', '--name', name, '--data-dir', dataDir])
  expect(created.code).toBe(0)
  return created.stdout.trim()
}

/** Users, an upload and webhook events with hostile text, as other clients would send them. */
async function seed() {
  const json = { 'content-type': 'application/json' }
  for (const [name, email] of [
    [HOSTILE_NAME, 'hostile@example.com'],
    ['Ada Lovelace', 'ada@example.com'],
    ['Alan Turing', 'alan@example.com'],
  ]) {
    const created = await api('/users', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name, email }),
    })
    expect(created.status).toBe(201)
  }
  const upload = await api('/upload', {
    method: 'POST',
    headers: { 'content-type': multipartType() },
    body: multipartBody([
      { name: 'description', data: HOSTILE_DESCRIPTION },
      {
        name: 'file',
        filename: HOSTILE_FILENAME.replaceAll('"', '\\"'),
        contentType: 'text/plain',
        data: 'hello, console\n',
      },
    ]),
  })
  expect(upload.status).toBe(201)
  expect(((await upload.json()) as { files: { filename: string }[] }).files[0]?.filename).toBe(
    HOSTILE_FILENAME,
  )
  for (const body of [
    // No email: the user.created handler fails it, so there is something to retry.
    event('user.created', { name: 'Nobody' }, 'evt_fails'),
    event(HOSTILE_TYPE, {}, 'evt_hostile'),
  ]) {
    const delivered = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      headers: { ...json, ...(await stripeHeaders(body)) },
      body,
    })
    expect(delivered.status).toBe(200)
  }
}

/** Waits until `locator` holds `text` (Playwright's own expect is not bun:test's). */
async function waitForText(locator: Locator, text: string) {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 10_000 })
}

async function expectAccessible(where: string) {
  const violations = await seriousAxeViolations(page)
  expect({ where, violations }).toEqual({ where, violations: [] })
}

async function screenshot(name: string) {
  if (!SCREENSHOTS) return
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOT_DIR, `console-${name}.png`) })
}

/** Follows a navigation link by keyboard and waits for its page's heading and table. */
async function openSection(title: string) {
  await activate(page, title)
  await page.getByRole('heading', { level: 1, name: title }).waitFor()
}

async function signIn(withKey: string) {
  await page.getByRole('heading', { name: 'roster console' }).waitFor()
  await typeInto(page, 'API key', withKey)
  await page.keyboard.press('Enter')
}

/** Presses Enter on a control and returns the download it starts. */
async function downloadBy(name: string): Promise<{ download: Download; text: string }> {
  await tabTo(page, name)
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.keyboard.press('Enter'),
  ])
  const path = await download.path()
  return { download, text: readFileSync(path, 'utf8') }
}

const dialog = () => page.getByRole('dialog')
const mainText = async () => (await page.locator('main').textContent()) ?? ''

beforeAll(async () => {
  requireBinary()
  browser = await launchChromium()
  dir = tempDir()
  dataDir = join(dir.path, 'data')
  key = await createKey('console')
  receiver = await startReceiver('fail')
  // Outbound webhooks to the test's receiver on 127.0.0.1, given up after 10 s of failures.
  server = await startBinary(
    ['--data-dir', dataDir, '--webhook-allow-private', '--webhook-retry-window', '10s'],
    {
      env: cleanEnv({ ROSTER_WEBHOOK_SECRET: STRIPE_SECRET }),
    },
  )
  await seed()
  spareKey = await createKey('checks')
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
  page = await context.newPage()
  watch = watchPage(page)
})

afterAll(async () => {
  await context?.close()
  await browser?.close()
  await server?.stop()
  await receiver?.[Symbol.asyncDispose]()
  dir?.[Symbol.dispose]()
})

describe('the console in Chromium against the compiled binary, by keyboard', () => {
  test('sign-in: a wrong key gets a clear message, the right one opens the overview', async () => {
    await page.goto(`${server.url}/console`)
    await expectAccessible('sign-in')
    await signIn('rk_not_a_real_key_at_all')
    await waitForText(page.getByRole('alert'), 'wrong or has been revoked')
    await waitForText(page.getByRole('alert'), 'Request id: req_')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await signIn(key)
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    await waitForText(page.locator('main'), 'Failed webhook events')
    const counts = page.locator('section[aria-labelledby="counts-heading"] dd')
    // users, uploads, events, pending, failed (the handler refused evt_fails).
    expect(await counts.allTextContents()).toEqual(['3', '1', '2', '0', '1'])
    const facts = await page.locator('section[aria-labelledby="server-heading"]').textContent()
    expect(facts).toContain('0.1.0')
    expect(facts).toContain('Check: database')
    expect(await page.evaluate(() => sessionStorage.getItem('roster.console.key'))).toBe(key)
    await expectAccessible('overview')
    await screenshot('overview')
  })

  test('users: hostile names are text; create; a duplicate shows the message and request id', async () => {
    await openSection('Users')
    await waitForText(page.locator('tbody'), HOSTILE_NAME)
    expect(await page.locator('main img, main script, main svg').count()).toBe(0)
    await expectAccessible('users')
    await screenshot('users')

    await activate(page, 'New user')
    await dialog().waitFor()
    await typeInto(page, 'Name', 'Grace Hopper')
    await typeInto(page, 'Email', 'grace@example.com')
    await typeInto(page, 'Password (optional)', 'correct horse battery')
    await expectAccessible('new user dialog')
    await page.keyboard.press('Enter')
    await waitForText(page.getByRole('status'), 'created')
    await waitForText(page.locator('tbody'), 'grace@example.com')

    await activate(page, 'New user')
    await typeInto(page, 'Name', 'Grace Again')
    await typeInto(page, 'Email', 'GRACE@example.com')
    await page.keyboard.press('Enter')
    await waitForText(dialog().getByRole('alert'), 'Request id: req_')
    await page.keyboard.press('Escape')
    await dialog().waitFor({ state: 'detached' })
    const all = (await (await api('/users?limit=100')).json()) as { data: { email: string }[] }
    expect(
      all.data.filter((user) => user.email.toLowerCase() === 'grace@example.com'),
    ).toHaveLength(1)
  })

  test('users: search with v2 q and email, and pages', async () => {
    await typeInto(page, 'Name or email contains', 'lovelace')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('caption'), '1 user found')
    expect(await page.locator('tbody tr').count()).toBe(1)
    await typeInto(page, 'Name or email contains', '')
    await typeInto(page, 'Email is exactly', 'ALAN@example.com')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('tbody'), 'Alan Turing')
    expect(await page.locator('tbody tr').count()).toBe(1)
    await typeInto(page, 'Email is exactly', '')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('caption'), '4 users')
    // 25 more users make a second page of 20.
    for (let i = 0; i < 25; i++) {
      await api('/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Filler ${i}`, email: `filler${i}@example.com` }),
      })
    }
    await activate(page, 'Search')
    await waitForText(page.locator('caption'), '29 users')
    await activate(page, 'Next')
    await waitForText(page.locator('.pager'), 'Page 2')
    await page.locator('tbody tr').nth(9).waitFor({ state: 'detached' })
    expect(await page.locator('tbody tr').count()).toBe(9)
    await activate(page, 'Previous')
    await waitForText(page.locator('.pager'), 'Page 1')
    await page.locator('tbody tr').nth(19).waitFor()
    expect(await page.locator('tbody tr').count()).toBe(20)
  })

  test('users: a column head sorts, again reverses, and the order stays in the URL across a reload', async () => {
    const namesInApiOrder = async (sort: string) =>
      (
        (await (await api(`/v2/users?sort=${sort}&limit=20`)).json()) as {
          data: { name: string }[]
        }
      ).data.map((user) => user.name)
    const shownNames = async () => await page.locator('tbody tr td:nth-child(2)').allTextContents()
    /** Waits until the table shows exactly these names, in this order (not only the first:
     * "Filler 1" comes first in creation order and in name order alike). */
    const untilShown = (names: string[]) =>
      page.waitForFunction(
        (expected) =>
          JSON.stringify(
            [...document.querySelectorAll('tbody tr td:nth-child(2)')].map(
              (cell) => cell.textContent,
            ),
          ) === expected,
        JSON.stringify(names),
      )
    const nameHead = page.locator('thead th', { hasText: 'Name' })
    expect(await nameHead.getAttribute('aria-sort')).toBeNull()
    await activate(page, 'Name')
    await page.waitForURL(/sort=name/)
    await untilShown(await namesInApiOrder('name'))
    expect(await nameHead.getAttribute('aria-sort')).toBe('ascending')
    expect(await shownNames()).toEqual(await namesInApiOrder('name'))
    await page.keyboard.press('Enter')
    await page.waitForURL(/sort=-name/)
    await untilShown(await namesInApiOrder('-name'))
    expect(await nameHead.getAttribute('aria-sort')).toBe('descending')
    await expectAccessible('users sorted by name, descending')
    await page.reload()
    await page.locator('thead th[aria-sort="descending"]', { hasText: 'Name' }).waitFor()
    expect(await shownNames()).toEqual(await namesInApiOrder('-name'))
    // Back to creation order: the Id head sorts by id.
    await activate(page, 'Id')
    await page.waitForURL(/sort=id|#\/users$/)
    await page.locator('thead th[aria-sort="ascending"]', { hasText: 'Id' }).waitFor()
  })

  test('users: a stale edit shows both versions; the person keeps theirs', async () => {
    const grace = (await (await api('/v2/users?email=grace@example.com')).json()) as {
      data: { id: number }[]
    }
    const id = grace.data[0]?.id as number
    await typeInto(page, 'Email is exactly', 'grace@example.com')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('caption'), '1 user found')
    await activate(page, `Edit user ${id}`)
    await dialog().getByLabel('Name').waitFor()
    await typeInto(page, 'Name', 'Grace (console)')
    // Meanwhile someone else renames her.
    const other = await api(`/users/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ name: 'Grace (elsewhere)' }),
    })
    expect(other.status).toBe(200)
    await activate(page, 'Save')
    await waitForText(dialog(), 'Someone else changed this user')
    const versions = await dialog().locator('tbody td').allTextContents()
    expect(versions).toEqual([
      'Grace (console)',
      'Grace (elsewhere)',
      'grace@example.com',
      'grace@example.com',
    ])
    await expectAccessible('edit conflict')
    await screenshot('conflict')
    await activate(page, 'Save mine over theirs')
    await waitForText(page.getByRole('status'), `User ${id} saved.`)
    const saved = (await (await api(`/users/${id}`)).json()) as { name: string }
    expect(saved.name).toBe('Grace (console)')

    // The other choice: take the saved values and edit those.
    await activate(page, `Edit user ${id}`)
    await dialog().getByLabel('Name').waitFor()
    await api(`/users/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ email: 'grace.hopper@example.com' }),
    })
    await activate(page, 'Save')
    await waitForText(dialog(), 'Someone else changed this user')
    await activate(page, 'Edit the saved values')
    expect(await dialog().getByLabel('Email').inputValue()).toBe('grace.hopper@example.com')
    await activate(page, 'Save')
    await waitForText(page.getByRole('status'), `User ${id} saved.`)
  })

  test('users: delete asks first; export gives what the API streams', async () => {
    await typeInto(page, 'Email is exactly', '')
    await typeInto(page, 'Name or email contains', 'alan')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('caption'), '1 user found')
    const alan = (await (await api('/v2/users?email=alan@example.com')).json()) as {
      data: { id: number }[]
    }
    const id = alan.data[0]?.id as number
    await activate(page, `Delete user ${id}`)
    await waitForText(dialog(), 'Alan Turing')
    await expectAccessible('delete dialog')
    await activate(page, 'Cancel')
    expect((await api(`/users/${id}`)).status).toBe(200)
    await activate(page, `Delete user ${id}`)
    await activate(page, 'Delete user')
    await waitForText(page.getByRole('status'), `User ${id} deleted.`)
    expect((await api(`/users/${id}`)).status).toBe(404)

    const csv = await downloadBy('Export CSV')
    expect(csv.download.suggestedFilename()).toMatch(/^roster-users-\d{4}-\d{2}-\d{2}\.csv$/)
    expect(csv.text).toBe(await (await api('/users/export?format=csv')).text())
    expect(csv.text.split('\r\n')[0]).toBe(
      'id,name,email,username,active,role,email_verified_at,created_at,updated_at',
    )
    const jsonl = await downloadBy('Export JSON Lines')
    expect(jsonl.download.suggestedFilename()).toMatch(/\.jsonl$/)
    expect(jsonl.text).toBe(await (await api('/users/export?format=jsonl')).text())
    expect(jsonl.text).toContain(JSON.stringify(HOSTILE_NAME))
  })

  test('API keys: create shows the key once with a copy button; revoke asks first', async () => {
    await openSection('API keys')
    await waitForText(page.locator('tbody'), '(this console)')
    await activate(page, 'New API key')
    await typeInto(page, 'Name', 'deploy')
    await page.keyboard.press('Enter')
    const shown = dialog().getByLabel('The new key')
    await shown.waitFor()
    const created = await shown.inputValue()
    expect(created).toMatch(/^rk_/)
    await expectAccessible('new key dialog')
    await activate(page, 'Copy key')
    await waitForText(dialog().getByRole('status'), 'Copied')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(created)
    expect((await api('/data', {}, created)).status).toBe(200)
    await activate(page, 'Done')
    await waitForText(page.locator('tbody'), 'deploy')
    expect(await mainText()).not.toContain(created)
    await expectAccessible('keys')

    const keys = (await (await api('/api-keys')).json()) as { data: { id: number; name: string }[] }
    const deploy = keys.data.find((entry) => entry.name === 'deploy')?.id as number
    await activate(page, `Revoke key ${deploy}`)
    await activate(page, 'Revoke key')
    await waitForText(page.getByRole('status'), `Key ${deploy} revoked.`)
    expect((await api('/data', {}, created)).status).toBe(401)
  })

  test('API keys: the Id head turns the list newest first, kept in the URL across a reload', async () => {
    await openSection('API keys')
    const idHead = page.locator('thead th', { hasText: 'Id' })
    await idHead.waitFor()
    const apiIds = async (sort: string) =>
      ((await (await api(`/api-keys?sort=${sort}`)).json()) as { data: { id: number }[] }).data.map(
        (key) => String(key.id),
      )
    const shownIds = async () => await page.locator('tbody tr td:nth-child(1)').allTextContents()
    expect(await idHead.getAttribute('aria-sort')).toBe('ascending')
    expect(await shownIds()).toEqual(await apiIds('created'))
    await activate(page, 'Id')
    await page.waitForURL(/sort=-created/)
    await page.locator('thead th[aria-sort="descending"]', { hasText: 'Id' }).waitFor()
    const newest = await apiIds('-created')
    await page.waitForFunction(
      (first) => document.querySelector('tbody tr td')?.textContent === first,
      newest[0],
    )
    expect(await shownIds()).toEqual(newest)
    await page.reload()
    await page.locator('thead th[aria-sort="descending"]', { hasText: 'Id' }).waitFor()
    await page.waitForFunction(
      (first) => document.querySelector('tbody tr td')?.textContent === first,
      newest[0],
    )
    expect(await shownIds()).toEqual(newest)
  })

  test('uploads: hostile names are text; details, download, delete', async () => {
    await openSection('Uploads')
    await waitForText(page.locator('tbody'), HOSTILE_FILENAME)
    await waitForText(page.locator('tbody'), HOSTILE_DESCRIPTION)
    expect(await page.locator('main img, main script, main svg').count()).toBe(0)
    await expectAccessible('uploads')
    const list = (await (await api('/uploads')).json()) as { data: { id: string }[] }
    const id = list.data[0]?.id as string
    await activate(page, `Details of upload ${id}`)
    await waitForText(dialog(), 'text/plain')
    await expectAccessible('upload details')
    const file = await downloadBy(`Download ${HOSTILE_FILENAME}`)
    expect(file.text).toBe('hello, console\n')
    expect(file.download.suggestedFilename()).toContain('onerror')
    await activate(page, 'Close')
    await dialog().waitFor({ state: 'detached' })
    await activate(page, `Delete upload ${id}`)
    await activate(page, 'Delete upload')
    await waitForText(page.getByRole('status'), `Upload ${id} deleted.`)
    expect((await api(`/uploads/${id}`)).status).toBe(404)
    await waitForText(page.locator('main'), 'No uploads yet.')
  })

  test('webhook deliveries: filter by status, retry a failed event, hostile types are text', async () => {
    await openSection('Webhooks received')
    await waitForText(page.locator('tbody'), HOSTILE_TYPE)
    expect(await page.locator('main img, main script, main svg').count()).toBe(0)
    await expectAccessible('webhooks')
    await tabTo(page, 'Status')
    await page.keyboard.type('failed')
    await waitForText(page.locator('.pager'), '1–1 of 1')
    await waitForText(page.locator('tbody'), 'data.object.email is missing')
    const before = (await (await api('/webhooks/events?status=failed')).json()) as {
      data: { attempts: number }[]
    }
    await activate(page, 'Retry event evt_fails')
    await waitForText(page.getByRole('status'), 'evt_fails will be tried again now')
    // The worker tries at once; the handler fails again (still no email): one more attempt.
    for (let i = 0; i < 50; i++) {
      const after = (await (await api('/webhooks/events?status=failed')).json()) as {
        data: { attempts: number }[]
      }
      if ((after.data[0]?.attempts ?? 0) > (before.data[0]?.attempts ?? 0)) break
      await Bun.sleep(100)
      if (i === 49) throw new Error('the retried event was not attempted again')
    }
  })

  test('webhooks sent: an endpoint made with its secret shown once; one roster disabled is named at the top; enabled and retried, it delivers', async () => {
    await openSection('Webhooks sent')
    await expectAccessible('webhooks sent, empty')
    await activate(page, 'New endpoint')
    await typeInto(page, 'URL', 'ftp://nowhere.example/x')
    await typeInto(page, 'Events', 'user.created')
    await page.keyboard.press('Enter')
    await waitForText(
      dialog().locator('.field-error'),
      'must be an absolute http:// or https:// URL',
    )
    expect(await dialog().locator('input[aria-invalid="true"]').getAttribute('name')).toBe(
      'endpoint-url',
    )
    await expectAccessible('new endpoint, refused URL')
    await typeInto(page, 'URL', receiver.url)
    await page.keyboard.press('Enter')
    const shown = dialog().getByLabel('The signing secret')
    await shown.waitFor()
    const secret = await shown.inputValue()
    expect(secret).toMatch(/^whsec_/)
    await expectAccessible('endpoint secret shown')
    await activate(page, 'Done')
    await dialog().waitFor({ state: 'detached' })
    await waitForText(page.locator('tbody'), receiver.url)
    expect(await mainText()).not.toContain(secret)

    // The receiver fails for the whole window (10 s here): roster disables the endpoint.
    const made = await api('/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Hooked', email: 'hooked@example.com' }),
    })
    expect(made.status).toBe(201)
    for (let i = 0; ; i++) {
      const listed = (await (await api('/webhook-endpoints', {}, adminKey())).json()) as {
        data: { status: string }[]
      }
      if (listed.data[0]?.status === 'disabled') break
      if (i === 300) throw new Error('the endpoint was not disabled')
      await Bun.sleep(100)
    }
    await openSection('Activity')
    await openSection('Webhooks sent')
    await waitForText(page.getByRole('alert'), 'Fix the receiver, then enable it.')
    await expectAccessible('webhooks sent, one disabled')

    // Enabled again, and the failed delivery sent again from its log: it arrives, signed.
    receiver.mode = 'ok'
    await activate(page, 'Enable endpoint 1')
    await waitForText(page.getByRole('status'), 'Endpoint 1 enabled')
    await activate(page, 'Deliveries of endpoint 1')
    await waitForText(dialog().locator('tbody'), 'failed')
    await expectAccessible('delivery log')
    const failed = dialog().locator('tbody tr').first()
    const eventId = ((await failed.locator('code').textContent()) ?? '').trim()
    await activate(page, `Retry delivery of ${eventId}`)
    await waitForText(dialog().getByRole('status'), `${eventId} will be sent again now`)
    await receiver.until(1)
    verifyDelivery(receiver.answered[0] as never, secret)
    expect(receiver.answered[0]?.headers['webhook-id']).toBe(eventId)
    await activate(page, 'Refresh')
    await waitForText(dialog().locator('tbody'), 'delivered')
    // The open log and its filter are in the URL: a reload shows them again; Done takes them out.
    await dialog().getByLabel('Status').selectOption('failed')
    await page.waitForURL((url) => {
      const view = new URLSearchParams(url.hash.split('?')[1])
      return view.get('deliveries') === '1' && view.get('deliveryStatus') === 'failed'
    })
    await waitForText(dialog(), 'No deliveries yet.')
    await page.reload()
    await waitForText(dialog().locator('h2'), `Deliveries to ${receiver.url}`)
    expect(await dialog().getByLabel('Status').inputValue()).toBe('failed')
    await waitForText(dialog(), 'No deliveries yet.')
    await dialog().getByLabel('Status').selectOption('')
    await waitForText(dialog().locator('tbody'), 'delivered')
    await activate(page, 'Done')
    await dialog().waitFor({ state: 'detached' })
    expect(new URL(page.url()).hash).toBe('#/webhooks-sent')

    // A rotation shows the new secret once; deleting asks first.
    await activate(page, 'Rotate secret of endpoint 1')
    await activate(page, 'Rotate secret')
    const rotated = dialog().getByLabel('The signing secret')
    await rotated.waitFor()
    expect(await rotated.inputValue()).not.toBe(secret)
    await activate(page, 'Done')
    await dialog().waitFor({ state: 'detached' })
    await activate(page, 'Delete endpoint 1')
    await expectAccessible('delete endpoint')
    await activate(page, 'Delete endpoint')
    await waitForText(page.getByRole('status'), 'Endpoint 1 deleted.')
  })

  test('activity: the audit log filtered by action; a change made elsewhere appears live', async () => {
    await openSection('Activity')
    await waitForText(page.getByRole('status'), 'Live: new events appear at the top')
    await waitForText(page.locator('tbody'), 'webhook_endpoint.deleted')
    await expectAccessible('activity')
    await typeInto(page, 'Action', 'user.*')
    await page.keyboard.press('Enter')
    await page.locator('tbody').filter({ hasNotText: 'webhook_endpoint' }).waitFor()
    await waitForText(page.locator('tbody'), 'user.created')
    await waitForText(page.getByRole('status'), 'Live: new events appear at the top')
    // Someone else changes a user: the event is at the top without a reload.
    const made = (await (
      await api('/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: HOSTILE_NAME, email: 'live@example.com' }),
      })
    ).json()) as { id: number }
    await waitForText(page.locator('tbody tr').first(), `user ${made.id}`)
    await waitForText(page.locator('tbody tr').first(), 'live@example.com')
    expect(await page.locator('main img, main script, main svg').count()).toBe(0)
    await expectAccessible('activity, live')
    // The filter and the page are in the URL: Older, then a reload, shows that page again.
    await page.waitForURL(/#\/activity\?action=user\.\*/)
    // The users test made 25 users: their user.created events fill more than the first page.
    expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(20)
    await activate(page, 'Older')
    await page.waitForURL(/trail=evt_/)
    // Wait for the older page itself: leaving the first page drops the live rows before the
    // older page arrives, so "the first row changed" can be seen on the first page still.
    const shownQuery = new URLSearchParams(new URL(page.url()).hash.split('?')[1])
    const olderQuery = new URLSearchParams({
      limit: '20',
      action: 'user.*',
      cursor: shownQuery.get('trail') ?? '',
    })
    const olderPage = (await (await api(`/audit?${olderQuery}`)).json()) as {
      data: { target: { type: string; id: string } }[]
    }
    const olderTargets = olderPage.data.map((event) => `${event.target.type} ${event.target.id}`)
    expect(olderTargets.length).toBeGreaterThan(0)
    const showsTargets = (targets: string[]) =>
      page.waitForFunction(
        (expected) =>
          [...document.querySelectorAll('tbody tr td:nth-child(4)')]
            .map((cell) => cell.textContent)
            .join('|') === expected,
        targets.join('|'),
      )
    await showsTargets(olderTargets)
    await page.reload()
    await waitForText(page.getByRole('status'), 'An older page')
    expect(await page.getByLabel('Action').inputValue()).toBe('user.*')
    await showsTargets(olderTargets)
  })

  test('mail: a reset sent from the users page waits in the outbox; its link sets the password', async () => {
    const made = await api(
      '/users',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Grace Hopper', email: 'grace@example.com' }),
      },
      adminKey(),
    )
    const { id } = (await made.json()) as { id: number }
    await openSection('Users')
    await typeInto(page, 'Email is exactly', 'grace@example.com')
    await page.keyboard.press('Enter')
    await activate(page, `Edit user ${id}`)
    await waitForText(dialog(), 'Address not verified yet')
    await expectAccessible('edit dialog with mail actions')
    await activate(page, 'Send a password-reset link')
    await waitForText(
      page.getByRole('status'),
      'A password-reset link is on its way to grace@example.com',
    )
    await openSection('Mail outbox')
    // The worker writes the message right after the request; Refresh until it shows.
    for (let i = 0; (await page.getByRole('link', { name: 'Open the link' }).count()) === 0; i++) {
      if (i === 50) throw new Error('the requested message was not written')
      await activate(page, 'Refresh')
      await Bun.sleep(100)
    }
    await waitForText(page.locator('tbody'), 'grace@example.com')
    await expectAccessible('mail outbox')
    const link = (await page
      .getByRole('link', { name: 'Open the link' })
      .first()
      .getAttribute('href')) as string
    expect(link).toStartWith(`${server.url}/auth/password-reset?token=rat_`)
    const reset = await context.newPage()
    const resetWatch = watchPage(reset)
    await reset.goto(link)
    expect(await seriousAxeViolations(reset)).toEqual([])
    await typeInto(reset, 'New password (at least 8 characters)', 'a console-made passphrase')
    await reset.keyboard.press('Enter')
    await reset.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor()
    expect(resetWatch.errors).toEqual([])
    await reset.close()
    const login = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=grace@example.com&password=a+console-made+passphrase',
    })
    expect(login.status).toBe(200)
  })

  test('a key revoked meanwhile sends the console back to sign-in; sign-out forgets the key', async () => {
    await openSection('Overview')
    // The heading shows before the overview's requests finish; revoking while they are in
    // flight would send the console to sign-in before Refresh is pressed.
    await page.getByRole('heading', { level: 2, name: 'Data' }).waitFor()
    const revoked = await runBinary(['keys', 'revoke', '1', '--data-dir', dataDir])
    expect(revoked.code).toBe(0)
    await activate(page, 'Refresh')
    await waitForText(page.locator('main'), 'no longer accepts this sign-in')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    const second = await createKey('console-2')
    await signIn(second)
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    await activate(page, 'Sign out')
    await waitForText(page.locator('main'), 'Signed out')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.reload()
    await page.getByLabel('API key', { exact: true }).waitFor()
  })

  test('an admin signs in with email and password; a member is told it is not an admin', async () => {
    for (const [email, role] of [
      ['root@example.com', 'admin'],
      ['member@example.com', 'member'],
    ] as const) {
      const made = await runBinary(
        [
          'users',
          'create',
          '--role',
          role,
          '--name',
          role,
          '--email',
          email,
          '--password-stdin',
          '--data-dir',
          dataDir,
        ],
        { stdin: `${ADMIN_PASSWORD}\n` },
      )
      expect(made.code).toBe(0)
    }
    await expectAccessible('sign-in with two forms')
    await typeInto(page, 'Email', 'root@example.com')
    await typeInto(page, 'Password', 'not the password')
    await page.keyboard.press('Enter')
    await waitForText(page.getByRole('alert'), 'The email or password is wrong')
    await typeInto(page, 'Email', 'member@example.com')
    await typeInto(page, 'Password', ADMIN_PASSWORD)
    await page.keyboard.press('Enter')
    await waitForText(page.getByRole('alert'), 'This account is not an admin')
    await typeInto(page, 'Email', 'root@example.com')
    await typeInto(page, 'Password', ADMIN_PASSWORD)
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem('roster.console.admin'))).toBe(
      'root@example.com',
    )
    // The session is a cookie roster set HttpOnly: the page's script cannot read it.
    expect(await page.evaluate(() => document.cookie)).toBe('')
  })

  test('users show role and groups; an admin promotes a member from the edit dialog', async () => {
    await openSection('Users')
    await typeInto(page, 'Email is exactly', 'member@example.com')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('tbody'), 'member@example.com')
    await waitForText(page.locator('tbody'), 'member')
    const member = (await (
      await api('/v2/users?email=member@example.com', {}, adminKey())
    ).json()) as {
      data: { id: number }[]
    }
    const id = member.data[0]?.id as number
    await activate(page, `Edit user ${id}`)
    await tabTo(page, 'Role')
    await page.keyboard.type('admin')
    await expectAccessible('edit user with role')
    await activate(page, 'Save')
    await waitForText(page.getByRole('status'), `User ${id} saved.`)
    const after = (await (await api(`/users/${id}`, {}, adminKey())).json()) as { role: string }
    expect(after.role).toBe('admin')
  })

  test('a user provisioned through SCIM shows its externalId; an admin deactivates it from the edit dialog', async () => {
    const scimKey = (await (
      await api(
        '/api-keys',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'okta', scopes: ['scim'] }),
        },
        adminKey(),
      )
    ).json()) as { key: string }
    const provisioned = await fetch(`${server.url}/scim/v2/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scimKey.key}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'hopper',
        externalId: 'okta-42',
        emails: [{ value: 'hopper@example.com', primary: true }],
        displayName: 'Grace Hopper',
      }),
    })
    const id = Number(((await provisioned.json()) as { id: string }).id)
    await openSection('Users')
    await typeInto(page, 'Email is exactly', 'hopper@example.com')
    await page.keyboard.press('Enter')
    await waitForText(page.locator('tbody'), 'Grace Hopper')
    await activate(page, `Edit user ${id}`)
    await waitForText(dialog(), 'Provisioned through SCIM, externalId okta-42.')
    await waitForText(dialog(), 'Signs in as hopper.')
    await tabTo(page, 'Active: may sign in')
    await page.keyboard.press('Space')
    await expectAccessible('edit a provisioned user')
    await activate(page, 'Save')
    await waitForText(page.getByRole('status'), `User ${id} saved.`)
    await waitForText(page.locator('tbody'), 'deactivated')
    const after = (await (await api(`/users/${id}`, {}, adminKey())).json()) as { active: boolean }
    expect(after.active).toBe(false)
  })

  test('groups: create (a taken name is shown beside the field), add a member by email, take them out', async () => {
    await openSection('Groups')
    await activate(page, 'New group')
    await typeInto(page, 'Name', 'Engineering')
    await typeInto(page, 'Description (optional)', 'Builds roster')
    await page.keyboard.press('Enter')
    await waitForText(page.getByRole('status'), 'Group Engineering created.')
    await activate(page, 'New group')
    await typeInto(page, 'Name', 'ENGINEERING')
    await page.keyboard.press('Enter')
    await waitForText(dialog().locator('.field-error'), 'is taken by another group')
    const invalid = dialog().locator('input[aria-invalid="true"]')
    expect(await invalid.getAttribute('name')).toBe('group-name')
    await expectAccessible('group name taken')
    await activate(page, 'Cancel')
    await dialog().waitFor({ state: 'detached' })
    await waitForText(page.locator('tbody'), 'Builds roster')
    await expectAccessible('groups')
    await activate(page, 'Members of Engineering')
    await typeInto(page, 'Add a user by email', 'ada@example.com')
    await page.keyboard.press('Enter')
    await waitForText(dialog().locator('tbody'), 'Ada Lovelace')
    await expectAccessible('group members')
    const groups = (await (await api('/groups', {}, adminKey())).json()) as {
      data: { id: number; members: number[] }[]
    }
    expect(groups.data[0]?.members).toHaveLength(1)
    await activate(page, 'Take out Ada Lovelace')
    await waitForText(dialog().getByRole('status'), 'Ada Lovelace taken out.')
    await activate(page, 'Done')
    await dialog().waitFor({ state: 'detached' })
  })

  test('API keys: a key with chosen scopes and an expiry date', async () => {
    await openSection('API keys')
    await activate(page, 'New API key')
    await typeInto(page, 'Name', 'reader')
    await tabTo(page, 'Everything (*)')
    await page.keyboard.press('Space')
    await tabTo(page, 'users:read')
    await page.keyboard.press('Space')
    await typeInto(page, 'Expires (optional)', '12312099')
    await expectAccessible('new key with scopes')
    await activate(page, 'Create key')
    const shown = dialog().getByLabel('The new key')
    await shown.waitFor()
    const created = await shown.inputValue()
    await activate(page, 'Done')
    await waitForText(page.locator('tbody'), 'users:read')
    const keys = (await (await api('/api-keys', {}, adminKey())).json()) as {
      data: { name: string; scopes: string[]; expires_at: string | null }[]
    }
    const reader = keys.data.find((entry) => entry.name === 'reader')
    expect(reader?.scopes).toEqual(['users:read'])
    expect(
      reader?.expires_at?.startsWith('2099-12-31') || reader?.expires_at?.startsWith('2100-01-01'),
    ).toBe(true)
    expect((await api('/users', {}, created)).status).toBe(200)
    expect((await api('/api-keys', {}, created)).status).toBe(403)
  })

  test('an admin signing out ends the session on the server', async () => {
    const cookies = await context.cookies(server.url)
    const session = cookies.find((cookie) => cookie.name === 'session')
    expect(session?.httpOnly).toBe(true)
    await activate(page, 'Sign out')
    await waitForText(page.locator('main'), 'Signed out.')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    const reuse = await fetch(`${server.url}/me`, {
      headers: { cookie: `session=${session?.value}` },
    })
    expect(reuse.status).toBe(401)
  })

  test('the page made no request off its origin, put no key in a URL, and ran no injected script', async () => {
    const origin = new URL(server.url).origin
    const offOrigin = watch.requests.filter((url) => new URL(url).origin !== origin)
    expect(offOrigin).toEqual([])
    expect(watch.requests.filter((url) => url.includes('rk_'))).toEqual([])
    expect(page.url()).not.toContain('rk_')
    expect(watch.dialogs).toEqual([])
    // The browser logs the refusals the flows provoked (wrong key, duplicate email, stale
    // edits, a refused endpoint URL); anything else (a CSP refusal, an exception) is a failure.
    const provoked = /Failed to load resource: .* status of (401|403|409|412|422) /
    expect(watch.errors.filter((text) => !provoked.test(text))).toEqual([])
    const log = server.stderr.join('\n')
    expect(log).not.toContain(key)
  })
})
