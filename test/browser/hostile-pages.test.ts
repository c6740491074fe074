import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { tempDir } from '../helpers/app'
import { type RunningBinary, requireBinary, startBinary } from '../helpers/binary'
import { launchChromium } from '../helpers/browser'

// Section 11 as a web page an attacker controls sees it, in Chromium against the compiled
// binary on its default (loopback, /users open): the page cannot take over an account, from its
// own origin or through a DNS name it points at 127.0.0.1.
setDefaultTimeout(60_000)

const PASSWORD = 'correct horse battery staple'
const REBIND = 'rebind.attacker.test'

let browser: Browser
let dir: ReturnType<typeof tempDir>
let roster: RunningBinary
let port: string
let attacker: ReturnType<typeof Bun.serve>

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

async function signsIn(password: string): Promise<boolean> {
  const reply = await fetch(
    `http://localhost:${port}/login`,
    json({ email: 'ada@example.com', password }),
  )
  return reply.status === 200
}

beforeAll(async () => {
  requireBinary()
  dir = tempDir()
  roster = await startBinary(['--data-dir', dir.path])
  port = new URL(roster.url).port
  const created = await fetch(
    `http://localhost:${port}/users`,
    json({ name: 'Ada', email: 'ada@example.com', password: PASSWORD }),
  )
  expect(created.status).toBe(201)
  // The attacker's site: a page that tries to set Ada's password and email from the browser.
  attacker = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () =>
      new Response(
        `<!doctype html><title>cute cats</title><script>
        const target = 'http://localhost:${port}/users/1'
        const attempt = (body) => fetch(target, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
        }).then((r) => r.status, (e) => 'blocked: ' + e.message)
        window.outcome = Promise.all([
          attempt({ password: 'owned by the attacker' }),
          attempt({ email: 'attacker@evil.test' }),
        ])
        </script>`,
        { headers: { 'content-type': 'text/html' } },
      ),
  })
  // A DNS name the attacker controls, pointed at this machine (what rebinding arranges).
  browser = await launchChromium([`--host-resolver-rules=MAP ${REBIND} 127.0.0.1`])
})

afterAll(async () => {
  await browser?.close()
  attacker?.stop(true)
  await roster?.stop()
  dir?.[Symbol.dispose]()
})

describe('a hostile web page against a developer’s roster', () => {
  test('from its own origin: the password and email of an account that signs in are refused (401)', async () => {
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${attacker.port}/`)
    const outcome = await page.evaluate(
      () => (globalThis as unknown as { outcome: Promise<unknown> }).outcome,
    )
    expect(outcome).toEqual([401, 401])
    await page.close()
    expect(await signsIn(PASSWORD)).toBe(true)
    expect(await signsIn('owned by the attacker')).toBe(false)
    const user = await (await fetch(`http://localhost:${port}/users/1`)).json()
    expect(user.email).toBe('ada@example.com')
  })

  test('through a name rebound to 127.0.0.1: every request is 421, nothing is created', async () => {
    const page = await browser.newPage()
    const landing = await page.goto(`http://${REBIND}:${port}/users`)
    expect(landing?.status()).toBe(421)
    // Same-origin now, as rebinding makes it: the page's own requests are refused too.
    const statuses = await page.evaluate(async () => {
      const post = await fetch('/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Mallory', email: 'mallory@evil.test' }),
      })
      const patch = await fetch('/users/1', {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ password: 'owned by the attacker' }),
      })
      return [post.status, patch.status, (await fetch('/users')).status]
    })
    expect(statuses).toEqual([421, 421, 421])
    await page.close()
    const list = await (await fetch(`http://localhost:${port}/users`)).json()
    expect(list.pagination.total).toBe(1)
    expect(await signsIn(PASSWORD)).toBe(true)
  })
})
