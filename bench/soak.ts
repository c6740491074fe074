// Soak: a steady mixed load (reads, writes, sign-ins) against the compiled binary for
// --seconds (600 by default; CI runs 30), sampling the server's RSS four times a second (each
// 10 s window reports its lowest sample: the floor a leak would raise). Passes when no answer
// is an error, the RSS floor at the end has not grown past the floor early in the run by more
// than 10 % plus an argon2id working set per hash that may run at once (ARGON2_RETAINED_MB),
// and the p99 of the last window is within 2× of a typical window's. Sign-ins rotate over SIGNERS
// accounts, as a real load's come from many people: the login limiter lets at most 10 password
// checks for one address run at once (CONTRACT section 11), so one account signing in five times
// a second, each check queued a second or two behind argon2 on two cores, would be throttled
// (429) by design.
// Usage: bun bench/soak.ts [--seconds 600] [--rate 500] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { MAX_CONCURRENT_HASHES, OWN_MEMORY_KIB } from '../src/auth/passwords'
import { readRss } from './lib/process'
import { buildBinary, pinLoadGenerator, startRoster } from './lib/roster'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    seconds: { type: 'string', default: '600' },
    rate: { type: 'string', default: '500' },
    'no-build': { type: 'boolean', default: false },
  },
})
const SECONDS = Number(args.seconds)
const RATE = Number(args.rate)
const WINDOW_MS = 10_000
const RSS_SAMPLE_MS = 250
// One argon2id hash or verify holds roster's memory cost (64 MiB). The allocator keeps that
// buffer after a sign-in or gives it back at its own pace: a 60 s trace at 4 samples a second
// sat at 145 MB, then at 210 MB without one lower sample for 36 s, then at 145 again. Growth up
// to one working set per hash that may run at once is that, not a leak (each runs on a thread
// of its own, whose allocator keeps its own buffer: a CI run whose sign-ins queued for 1.9 s at
// the end, both slots busy throughout, ended 100 MB above its early floor); a leak keeps
// growing past it.
const ARGON2_WORKING_SET_MB = OWN_MEMORY_KIB / 1024
const ARGON2_RETAINED_MB = ARGON2_WORKING_SET_MB * MAX_CONCURRENT_HASHES
const PASSWORD = 'soak test password'
const SEEDED = 1000
const SIGNERS = 20
const signerEmail = (n: number) => `soak-signer-${n % SIGNERS}@example.com`

interface Window {
  at: number
  sent: number
  errors: number
  /** Latencies of everything but sign-ins (argon2 takes its ~50 ms by design). */
  p50: number
  p99: number
  signInP50: number
  rssMb: number
}

type Op = (url: string, n: number) => Promise<Response>

const json = (url: string, method: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

const quantile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
}

/** The mix, per 100 requests: reads 70, writes 25 (create, rename, delete), sign-ins and /me 5. */
function operations(state: { token: string; created: number[] }) {
  // Its own count: the request number picks the operation, so it repeats for every sign-in.
  let signIns = 0
  const signIn: Op = async (url) => {
    const response = await json(`${url}/login`, 'POST', {
      email: signerEmail(signIns++),
      password: PASSWORD,
    })
    if (response.status === 200) {
      state.token = ((await response.clone().json()) as { access_token: string }).access_token
    }
    return response
  }
  const create: Op = async (url, n) => {
    const response = await json(`${url}/users`, 'POST', {
      name: `Soak ${n}`,
      email: `soak-${n}@example.com`,
    })
    if (response.status === 201)
      state.created.push(((await response.clone().json()) as { id: number }).id)
    return response
  }
  const remove: Op = (url, n) => {
    const id = state.created.shift()
    return id === undefined
      ? fetch(`${url}/users/${1 + (n % SEEDED)}`)
      : fetch(`${url}/users/${id}`, { method: 'DELETE' })
  }
  const weighted: [number, Op][] = [
    [45, (url, n) => fetch(`${url}/users/${1 + (n % SEEDED)}`)],
    [10, (url) => fetch(`${url}/users?limit=20`)],
    [10, (url, n) => fetch(`${url}/v2/users?limit=20&offset=${n % (SEEDED - 100)}`)],
    [5, (url) => fetch(`${url}/health`)],
    [12, create],
    [8, (url, n) => json(`${url}/users/${1 + (n % SEEDED)}`, 'PATCH', { name: `Renamed ${n}` })],
    [5, remove],
    [4, (url) => fetch(`${url}/me`, { headers: { authorization: `Bearer ${state.token}` } })],
    [1, signIn],
  ]
  return {
    signIn,
    table: weighted.flatMap(([weight, op]) => Array.from({ length: weight }, () => op)),
  }
}

async function main() {
  pinLoadGenerator()
  buildBinary(args['no-build'])
  const dir = mkdtempSync(join(tmpdir(), 'roster-soak-'))
  const server = await startRoster({
    dataDir: join(dir, 'data'),
    logFile: join(dir, 'access.log'),
  })
  try {
    const url = server.url
    for (let i = 0; i < SEEDED; i++) {
      await (
        await json(`${url}/users`, 'POST', { name: `Seed ${i}`, email: `seed${i}@example.com` })
      ).arrayBuffer()
    }
    for (let i = 0; i < SIGNERS; i++) {
      await (
        await json(`${url}/users`, 'POST', {
          name: `Soak signer ${i}`,
          email: signerEmail(i),
          password: PASSWORD,
        })
      ).arrayBuffer()
    }
    const state = { token: '', created: [] as number[] }
    const { signIn, table } = operations(state)
    await (await signIn(url, 0)).arrayBuffer()

    const windows: Window[] = []
    const errorSamples: string[] = []
    const fresh = () => ({
      sent: 0,
      errors: 0,
      latencies: [] as number[],
      signIns: [] as number[],
      rss: [] as number[],
    })
    let current = fresh()
    const started = performance.now()
    // Each window reports its lowest sample. Sign-ins run argon2 (64 MiB each, two at a time)
    // and a sample taken meanwhile would read as growth; a leak raises the floor as well.
    const sampler = setInterval(() => current.rss.push(readRss(server.proc.pid)), RSS_SAMPLE_MS)
    const closeWindow = (at: number) => {
      windows.push({
        at: Math.round((at - started) / 1000),
        sent: current.sent,
        errors: current.errors,
        p50: quantile(current.latencies, 0.5),
        p99: quantile(current.latencies, 0.99),
        signInP50: quantile(current.signIns, 0.5),
        rssMb: Math.min(...current.rss) / 1024,
      })
      current = fresh()
    }
    let windowEnds = started + WINDOW_MS
    const pending = new Set<Promise<void>>()
    for (let n = 0; n < SECONDS * RATE; n++) {
      const wait = started + (n * 1000) / RATE - performance.now()
      if (wait > 1) await Bun.sleep(wait)
      if (performance.now() >= windowEnds) {
        closeWindow(windowEnds)
        windowEnds += WINDOW_MS
      }
      const op = table[(n * 37) % table.length] as Op
      const window = current
      const sent = performance.now()
      window.sent++
      const request: Promise<void> = op(url, n)
        .then(async (response) => {
          await response.arrayBuffer()
          ;(op === signIn ? window.signIns : window.latencies).push(performance.now() - sent)
          if (response.status >= 400) {
            window.errors++
            if (errorSamples.length < 5) errorSamples.push(`${response.status} ${response.url}`)
          }
        })
        .catch((error: Error) => {
          window.errors++
          if (errorSamples.length < 5) errorSamples.push(error.message)
        })
        .finally(() => pending.delete(request))
      pending.add(request)
    }
    await Promise.all(pending)
    clearInterval(sampler)
    closeWindow(performance.now())

    // Early: the highest floor of the windows in the first fifth of the run, never the first
    // window, which holds the cold start (a 30 s run once read 75 MB there and 139 MB at the end:
    // warm-up, not a leak). Late: the lowest floor of the last fifth. A leak raises both.
    const span = Math.max(1, Math.round(windows.length / 5))
    const earlyWindows = windows.slice(1, 1 + span)
    const early = earlyWindows.reduce(
      (high, w) => (w.rssMb > high.rssMb ? w : high),
      earlyWindows[0] ?? (windows[0] as Window),
    )
    const lateWindows = windows.slice(-span)
    const late = lateWindows.reduce(
      (low, w) => (w.rssMb < low.rssMb ? w : low),
      lateWindows[0] as Window,
    )
    const last = windows.at(-1) as Window
    const errors = windows.reduce((sum, w) => sum + w.errors, 0)
    const growth = late.rssMb / early.rssMb - 1
    const allowedMb = early.rssMb * 1.1 + ARGON2_RETAINED_MB
    const rssSteady = late.rssMb <= allowedMb
    // Stable: the last window's p99 within twice the typical window's (10 ms at least: one
    // fsync stall on this disk can take that long).
    const typical = quantile(
      windows.slice(1).map((w) => w.p99),
      0.5,
    )
    const p99Stable = last.p99 <= Math.max(2 * typical, 10)
    const ok = errors === 0 && rssSteady && p99Stable
    const rows = windows.map(
      (w) =>
        `| ${w.at} | ${w.sent} | ${w.errors} | ${w.p50.toFixed(2)} | ${w.p99.toFixed(2)} | ${w.signInP50.toFixed(0)} | ${w.rssMb.toFixed(1)} |`,
    )
    console.log(`Soak: ${SECONDS} s at ${RATE} requests/s (70 % reads, 25 % writes, 5 % sign-ins and /me), the compiled binary at synchronous=FULL with the access log on.

| t (s) | sent | errors | p50 ms | p99 ms | sign-in p50 ms | RSS MB |
|---|---|---|---|---|---|---|
${rows.join('\n')}

RSS floor early (${early.at} s): ${early.rssMb.toFixed(1)} MB; late (${late.at} s): ${late.rssMb.toFixed(1)} MB (**${(growth * 100).toFixed(1)} %**; allowed: 10 % plus an argon2id working set for each of the ${MAX_CONCURRENT_HASHES} hashes that may run at once, ${allowedMb.toFixed(1)} MB). Errors: **${errors}**${errorSamples.length > 0 ? ` (${errorSamples.join('; ')})` : ''}. p99 (sign-ins aside) of a typical window and of the last: ${typical.toFixed(2)} / ${last.p99.toFixed(2)} ms${p99Stable ? '' : ' (not stable)'}. ${ok ? '**PASS**' : '**FAIL**'}`)
    if (!ok) process.exitCode = 1
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
