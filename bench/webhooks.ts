// Webhook benchmark against the compiled binary (at its default, synchronous=FULL):
//  1. signed deliveries at a steady 1,000/s: first a warm-up window (the JIT compiles the hot
//     paths then, and its threads share the server's one pinned core), then --windows windows
//     of --seconds each: the answer time's p99 per window and their median;
//  2. 10,000 deliveries at full speed, the server killed with SIGKILL half way, restarted, and
//     every delivery that got no 200 sent again (as a sender retries): afterwards each event must
//     be in the inbox exactly once, handled once, with exactly one user per event.
// Usage: bun bench/webhooks.ts [--seconds 10] [--windows 5] [--deliveries 10000] [--no-build]
import { Database } from 'bun:sqlite'
import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median, type Spawned, spawnServer } from './lib/process'
import { buildBinary, pinLoadGenerator, startRoster } from './lib/roster'
import { pinned } from './lib/wrk'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    seconds: { type: 'string', default: '10' },
    windows: { type: 'string', default: '5' },
    deliveries: { type: 'string', default: '10000' },
    'no-build': { type: 'boolean', default: false },
  },
})
const SECRET = 'whsec_bench_secret'
const RATE = 1000
const WARM_UP_SECONDS = 10

/** A Stripe-signed delivery of customer.created for a unique email. */
function delivery(run: string, n: number) {
  const body = JSON.stringify({
    id: `evt_${run}_${n}`,
    type: 'customer.created',
    data: { object: { email: `hook-${run}-${n}@example.com`, name: `Hook ${n}` } },
  })
  const t = Math.floor(Date.now() / 1000)
  const signature = createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex')
  return {
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${signature}` },
  }
}

const rosterAt = (dataDir: string) =>
  startRoster({
    dataDir,
    logFile: join(dataDir, '..', 'access.log'),
    env: { ROSTER_WEBHOOK_SECRET: SECRET },
  })

interface Window {
  total: number
  elapsed: number
  errors: number
  p50: number
  p99: number
  max: number
}

/** Deliveries at a steady RATE for `seconds`, each timed from send to the whole answer. */
async function steadyWindow(url: string, run: string, seconds: number): Promise<Window> {
  const total = RATE * seconds
  const prepared = Array.from({ length: total }, (_, n) => delivery(run, n))
  const latencies: number[] = []
  let errors = 0
  const pending: Promise<void>[] = []
  const started = performance.now()
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / RATE
    const wait = due - performance.now()
    if (wait > 1) await Bun.sleep(wait)
    const sent = performance.now()
    const { body, headers } = prepared[n] as ReturnType<typeof delivery>
    pending.push(
      fetch(`${url}/webhooks`, { method: 'POST', body, headers }).then(async (response) => {
        await response.arrayBuffer()
        latencies.push(performance.now() - sent)
        if (response.status !== 200) errors += 1
      }),
    )
  }
  await Promise.all(pending)
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? Number.NaN
  return {
    total,
    elapsed,
    errors,
    p50: at(0.5),
    p99: at(0.99),
    max: latencies.at(-1) ?? Number.NaN,
  }
}

const startBaseline = (dir: string) =>
  spawnServer(
    pinned(0, [
      process.execPath,
      join(import.meta.dir, 'webhook-baseline.ts'),
      join(dir, 'baseline.db'),
      SECRET,
    ]),
  )

/** A warm-up window, then the measured ones, against one server. */
async function steadyRate(start: () => Promise<Spawned>) {
  const server = await start()
  try {
    const warmUp = await steadyWindow(server.url, 'warm', WARM_UP_SECONDS)
    const windows: Window[] = []
    for (let i = 0; i < Number(args.windows); i++) {
      windows.push(await steadyWindow(server.url, `steady${i}`, Number(args.seconds)))
    }
    return { warmUp, windows }
  } finally {
    await server.stop()
  }
}

async function killMidway(dir: string) {
  const dataDir = join(dir, 'kill')
  const count = Number(args.deliveries)
  const prepared = Array.from({ length: count }, (_, n) => delivery('kill', n))
  const answered = new Set<number>()
  let server = await rosterAt(dataDir)
  let next = 0
  let killed = false
  const worker = async (url: string) => {
    while (next < count) {
      const n = next++
      const { body, headers } = prepared[n] as ReturnType<typeof delivery>
      try {
        const response = await fetch(`${url}/webhooks`, { method: 'POST', body, headers })
        await response.arrayBuffer()
        if (response.status === 200) answered.add(n)
      } catch {
        // The connection died with the server: this delivery counts as unanswered.
      }
      if (!killed && answered.size >= count / 2) {
        killed = true
        server.proc.kill('SIGKILL')
      }
    }
  }
  await Promise.all(Array.from({ length: 16 }, () => worker(server.url)))
  await server.proc.exited
  const answeredBeforeKill = answered.size
  server = await rosterAt(dataDir)
  // The sender retries every delivery it has no 200 for.
  const retries = prepared.map((_, n) => n).filter((n) => !answered.has(n))
  for (let i = 0; i < retries.length; i += 32) {
    await Promise.all(
      retries.slice(i, i + 32).map(async (n) => {
        const { body, headers } = delivery('kill', n)
        const response = await fetch(`${server.url}/webhooks`, { method: 'POST', body, headers })
        await response.arrayBuffer()
        if (response.status === 200) answered.add(n)
      }),
    )
  }
  // Let the worker finish handling, then count.
  for (let i = 0; i < 600; i++) {
    const db = new Database(join(dataDir, 'roster.db'), { readonly: true })
    const pendingEvents =
      db
        .query<{ n: number }, []>(
          "SELECT count(*) AS n FROM webhook_events WHERE status != 'processed'",
        )
        .get()?.n ?? 0
    db.close()
    if (pendingEvents === 0) break
    await Bun.sleep(100)
  }
  await server.stop()
  const db = new Database(join(dataDir, 'roster.db'), { readonly: true })
  const one = (sql: string) => db.query<{ n: number }, []>(sql).get()?.n ?? 0
  const result = {
    count,
    answeredBeforeKill,
    resent: retries.length,
    answered: answered.size,
    events: one("SELECT count(*) AS n FROM webhook_events WHERE event_id LIKE 'evt_kill_%'"),
    distinctEvents: one(
      "SELECT count(DISTINCT event_id) AS n FROM webhook_events WHERE event_id LIKE 'evt_kill_%'",
    ),
    processed: one("SELECT count(*) AS n FROM webhook_events WHERE status = 'processed'"),
    handledMoreThanOnce: one('SELECT count(*) AS n FROM webhook_events WHERE attempts > 1'),
    users: one("SELECT count(*) AS n FROM users WHERE email LIKE 'hook-kill-%'"),
  }
  db.close()
  return result
}

async function main() {
  pinLoadGenerator()
  buildBinary(args['no-build'])
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-webhooks-'))
  try {
    const steady = await steadyRate(() => rosterAt(join(dir, 'steady')))
    console.error('roster at a steady rate: done')
    const floor = await steadyRate(() => startBaseline(dir))
    console.error('baseline at a steady rate: done')
    const kill = await killMidway(dir)
    const ok =
      kill.answered === kill.count &&
      kill.events === kill.count &&
      kill.distinctEvents === kill.count &&
      kill.processed >= kill.count &&
      kill.handledMoreThanOnce === 0 &&
      kill.users === kill.count
    const row = (name: string, w: Window, b: Window) =>
      `| ${name} | ${w.errors} | ${w.p50.toFixed(2)} | ${w.p99.toFixed(2)} | ${w.max.toFixed(1)} | ${b.p50.toFixed(2)} | ${b.p99.toFixed(2)} | ${(w.p99 / b.p99).toFixed(2)}× |`
    const rows = steady.windows.map((w, i) => row(String(i + 1), w, floor.windows[i] as Window))
    const p99 = median(steady.windows.map((w) => w.p99))
    const floorP99 = median(floor.windows.map((w) => w.p99))
    console.log(`Steady ${RATE} deliveries/s for ${WARM_UP_SECONDS} s of warm-up, then ${steady.windows.length} windows of ${args.seconds} s (synchronous=FULL; every delivery creates a user). Answer times in ms, roster against the raw baseline (bench/webhook-baseline.ts) in the same run:

| window | roster errors | roster p50 | roster p99 | roster max | baseline p50 | baseline p99 | p99 ratio |
|---|---|---|---|---|---|---|---|
${row('warm-up', steady.warmUp, floor.warmUp)}
${rows.join('\n')}

Median p99 over the windows after the warm-up: **roster ${p99.toFixed(2)} ms** (target < 5 ms), baseline ${floorP99.toFixed(2)} ms.

SIGKILL half way through ${kill.count} deliveries: ${kill.answeredBeforeKill} answered before the kill; after the restart ${kill.resent} were sent again (those without a 200); inbox: ${kill.events} events (${kill.distinctEvents} distinct ids), ${kill.processed} processed, ${kill.handledMoreThanOnce} handled more than once; users created: ${kill.users}. ${ok ? '**No event lost or handled twice.**' : '**MISMATCH**'}`)
    if (!ok) process.exitCode = 1
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
