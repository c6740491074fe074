import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { activate, axeViolations, launchChromium, tabTo, typeInto } from '../helpers/browser'
import { event, STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

// Every page of the console on a desk (1280×800) and on a phone (390×844), in the light and
// the dark colour scheme: nothing wider than the screen, the row actions in view, axe-core with
// no violation at all, a screenshot of each kept in artifacts/console/ (CI keeps the folder).
// Then the view in the URL, the pager, focus after a dialog and notices that expire.
setDefaultTimeout(180_000)

const ARTIFACTS = join(import.meta.dir, '../../artifacts/console')
const VIEWPORTS = [
  { name: 'desk', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const
const SCHEMES = ['light', 'dark'] as const
const PAGES = [
  ['#/', 'Overview'],
  ['#/users', 'Users'],
  ['#/groups', 'Groups'],
  ['#/keys', 'API keys'],
  ['#/uploads', 'Uploads'],
  ['#/webhooks', 'Webhooks received'],
  ['#/webhooks-sent', 'Webhooks sent'],
  ['#/mail', 'Mail outbox'],
  ['#/activity', 'Activity'],
  ['#/security', 'Security'],
] as const

let browser: Browser
let dir: ReturnType<typeof tempDir>
let server: Awaited<ReturnType<typeof startBinary>>
let key: string

const api = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

beforeAll(async () => {
  requireBinary()
  browser = await launchChromium()
  dir = tempDir()
  const dataDir = join(dir.path, 'data')
  key = (
    await runBinary(['keys', 'create', '--name', 'layouts', '--data-dir', dataDir])
  ).stdout.trim()
  server = await startBinary(['--data-dir', dataDir], {
    env: cleanEnv({ ROSTER_WEBHOOK_SECRET: STRIPE_SECRET }),
  })
  // 25 users (three pages of 10), long names and addresses that could push a table wide.
  for (let n = 1; n <= 25; n++) {
    const name = n === 1 ? 'Ada Lovelace' : `Person ${n} with a rather long name, Esq.`
    const email =
      n === 1 ? 'ada@example.com' : `person.${n}.with.a.long.address@subdomain.example.com`
    expect((await api('/users', { name, email })).status).toBe(201)
  }
  expect((await api('/groups', { name: 'Engineering', description: 'Builds roster' })).status).toBe(
    201,
  )
  const body = event('user.created', { name: 'Nobody' }, 'evt_layout')
  await fetch(`${server.url}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await stripeHeaders(body)) },
    body,
  })
  mkdirSync(ARTIFACTS, { recursive: true })
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  dir?.[Symbol.dispose]()
})

async function signedIn(viewport: { width: number; height: number }, scheme: 'light' | 'dark') {
  const context = await browser.newContext({ viewport, colorScheme: scheme })
  const page = await context.newPage()
  await page.goto(`${server.url}/console`)
  await typeInto(page, 'API key', key)
  await page.keyboard.press('Enter')
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
  return { context, page }
}

/** Waits for a page's heading and for its lists to have loaded. */
async function open(page: Page, hash: string, title: string) {
  await page.goto(`${server.url}/console${hash}`)
  await page.getByRole('heading', { level: 1, name: title }).waitFor()
  await page.waitForFunction(
    () => !document.querySelector('main')?.textContent?.includes('Loading…'),
  )
}

describe('every console page on a desk and on a phone, light and dark', () => {
  for (const viewport of VIEWPORTS) {
    for (const scheme of SCHEMES) {
      test(`${viewport.width}×${viewport.height}, ${scheme}: no horizontal scroll, actions in view, axe clean`, async () => {
        const { context, page } = await signedIn(viewport, scheme)
        try {
          for (const [hash, title] of PAGES) {
            await open(page, hash, title)
            const widths = await page.evaluate(() => ({
              page: document.documentElement.scrollWidth,
              screen: window.innerWidth,
            }))
            expect({ title, wider: widths.page > widths.screen }).toEqual({ title, wider: false })
            // Each row's actions can be reached where they are: inside the screen.
            const actions = await page.locator('td.row-actions button').all()
            for (const button of actions.slice(0, 5)) {
              const box = await button.boundingBox()
              expect({
                title,
                inside: box !== null && box.x >= 0 && box.x + box.width <= viewport.width,
              }).toEqual({
                title,
                inside: true,
              })
            }
            const violations = await axeViolations(page)
            expect({ title, scheme, violations }).toEqual({ title, scheme, violations: [] })
            const file = `${viewport.name}-${scheme}-${title.toLowerCase().replaceAll(' ', '-')}.png`
            await page.screenshot({ path: join(ARTIFACTS, file), fullPage: true })
          }
          // The dark scheme is the page's, not only the system's.
          const background = await page.evaluate(
            () => getComputedStyle(document.documentElement).backgroundColor,
          )
          expect(background).toBe(scheme === 'dark' ? 'rgb(20, 24, 29)' : 'rgb(255, 255, 255)')
        } finally {
          await context.close()
        }
      })
    }
  }
})

describe('the users list keeps its view in the URL', () => {
  test('search, page and page size survive a reload and a shared link; Back returns', async () => {
    const { context, page } = await signedIn({ width: 390, height: 844 }, 'light')
    try {
      await open(page, '#/users?size=10', 'Users')
      await page.getByText('Page 1 of 3').waitFor()
      await activate(page, 'Last')
      await page.getByText('Page 3 of 3').waitFor()
      expect(new URL(page.url()).hash).toBe('#/users?page=3&size=10')
      await page.reload()
      await page.getByText('Page 3 of 3').waitFor()
      expect(await page.locator('tbody tr').count()).toBe(5)
      await page.goBack()
      await page.getByText('Page 1 of 3').waitFor()
      // A search, in the URL; a fresh tab with that URL shows the same.
      await typeInto(page, 'Name or email contains', 'ada')
      await page.keyboard.press('Enter')
      await page.getByText('1 user found').waitFor()
      const shared = page.url()
      expect(new URL(shared).hash).toBe('#/users?size=10&q=ada')
      // Another tab has its own sign-in (sessionStorage); after it, the link's view.
      const other = await context.newPage()
      await other.goto(shared)
      await typeInto(other, 'API key', key)
      await other.keyboard.press('Enter')
      await other.getByText('1 user found').waitFor()
      expect(await other.getByLabel('Name or email contains').inputValue()).toBe('ada')
      await other.close()
      // The page size, from the pager.
      await open(page, '#/users', 'Users')
      await page.getByLabel('Per page').selectOption('50')
      await page.getByText('Page 1 of 1').waitFor()
      expect(new URL(page.url()).hash).toBe('#/users?size=50')
      expect(await page.locator('tbody tr').count()).toBe(25)
      // Every list keeps its view so: a status filter, from a link.
      await open(page, '#/webhooks?status=failed', 'Webhooks received')
      await page.getByText('(1–1 of 1)').waitFor()
      expect(await page.getByLabel('Status').inputValue()).toBe('failed')
      await page.getByLabel('Status').selectOption('')
      await page.waitForFunction(() => location.hash === '#/webhooks')
    } finally {
      await context.close()
    }
  })

  test('closing a dialog gives the focus back to the button that opened it; notices expire', async () => {
    const { context, page } = await signedIn({ width: 1280, height: 800 }, 'dark')
    try {
      await open(page, '#/users?q=ada', 'Users')
      await page.getByText('1 user found').waitFor()
      await activate(page, 'Edit user 1')
      await page.getByRole('dialog').waitFor()
      await page.keyboard.press('Escape')
      await page.getByRole('dialog').waitFor({ state: 'detached' })
      // The focus comes back as the dialog goes (it may take the browser a frame).
      await page
        .waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Edit user 1',
          null,
          { timeout: 3000 },
        )
        .catch(() => {})
      expect(
        await page.evaluate(
          () =>
            document.activeElement?.getAttribute('aria-label') ??
            document.activeElement?.outerHTML.slice(0, 200),
        ),
      ).toBe('Edit user 1')
      // A notice says what happened, then goes (8 s), so it never describes an older state.
      await open(page, '#/groups', 'Groups')
      await tabTo(page, 'Delete group Engineering')
      await page.keyboard.press('Enter')
      await page.getByRole('dialog').waitFor()
      await activate(page, 'Delete group')
      const status = page.locator('main p.notice[role="status"]').first()
      await status.filter({ hasText: 'deleted' }).waitFor()
      await status.filter({ hasText: 'deleted' }).waitFor({ state: 'detached', timeout: 12_000 })
      expect(await status.textContent()).toBe('')
    } finally {
      await context.close()
    }
  })
})
