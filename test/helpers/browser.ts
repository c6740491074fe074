import { existsSync, readFileSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'

/** Debian's chromium; ROSTER_CHROMIUM names another. Never a downloaded browser. */
export const CHROMIUM = process.env.ROSTER_CHROMIUM ?? '/usr/bin/chromium'

/** A headless Chromium, or one line saying what to install. `args` are added to the launch. */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium (or set ROSTER_CHROMIUM)`,
    )
  }
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // No sandbox: CI runs as root. The rest keep Chromium from calling home.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-default-apps',
      '--disable-domain-reliability',
      ...args,
    ],
  })
}

/** What a page did that the console must never do, collected while a test drives it. */
export interface PageWatch {
  /** Every URL the page requested (documents, scripts, fetches, downloads). */
  requests: string[]
  /** alert/confirm/prompt dialogs: a script injected through data would open one. */
  dialogs: string[]
  /** Uncaught errors and console errors (CSP refusals are console errors). */
  errors: string[]
}

export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = { requests: [], dialogs: [], errors: [] }
  page.on('request', (request) => watch.requests.push(request.url()))
  page.on('dialog', (dialog) => {
    watch.dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  page.on('pageerror', (error) => watch.errors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error') watch.errors.push(message.text())
  })
  return watch
}

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: unknown[] }[]
}

/**
 * axe-core's serious and critical violations on the page as it is now (dialogs included).
 * axe goes in through the DevTools protocol, as a bookmarklet would: the page's CSP is left on.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  return (await axeViolations(page)).filter(
    (v) => v.impact === 'serious' || v.impact === 'critical',
  )
}

/** Every axe-core violation on the page, whatever its impact. */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE)
  const violations = (await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run: (...args: unknown[]) => Promise<unknown> } }
    ).axe
    const result = (await axe.run(document, { resultTypes: ['violations'] })) as {
      violations: AxeViolation[]
    }
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }))
  })) as AxeViolation[]
  return violations
}

/** The accessible name of the focused element, as the keyboard helpers match it. */
async function focusedName(page: Page): Promise<string> {
  return await page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null
    if (element === null || element === document.body) return ''
    const label = element.getAttribute('aria-label')
    if (label !== null) return label
    const labels = (element as HTMLInputElement).labels
    if (labels !== undefined && labels !== null && labels.length > 0) {
      return (labels[0]?.textContent ?? '').trim()
    }
    return (element.textContent ?? '').trim()
  })
}

/**
 * Presses Tab until the focused element's accessible name is `name` (exactly), as a person
 * without a mouse would. Fails when it is not reachable within `limit` presses.
 */
export async function tabTo(page: Page, name: string, limit = 80): Promise<void> {
  const seen: string[] = []
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab')
    const current = await focusedName(page)
    if (current === name) return
    seen.push(current)
  }
  throw new Error(`"${name}" cannot be reached with Tab; focus went through: ${seen.join(' | ')}`)
}

/** Tabs to a control and presses Enter on it. */
export async function activate(page: Page, name: string): Promise<void> {
  await tabTo(page, name)
  await page.keyboard.press('Enter')
}

/** Tabs to a labelled field and types into it (replacing what it held). */
export async function typeInto(page: Page, label: string, text: string): Promise<void> {
  await tabTo(page, label)
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.press('Backspace')
  await page.keyboard.type(text)
}
