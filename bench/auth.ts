// Credentials benchmark, in one run:
//  1. GET /secure (Basic) vs GET /me (bearer) on roster: Basic must not run argon2 per request.
//  2. GET /me (bearer) vs the raw baseline's GET /users/{id}.
//  3. 200 concurrent wrong-password logins for 20 s: roster's peak RSS, and /health meanwhile.
// Usage: bun bench/auth.ts [--duration 10] [--reps 5] [--flood 20] [--no-build]
// Each repetition measures the three scenarios in a rotating order; ratios are medians of
// same-repetition ratios.
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median, readRss, spawnServer } from './lib/process'
import { BINARY, buildBinary, ROOT } from './lib/roster'
import { ensureWrk, pinned, runWrk } from './lib/wrk'

const roster = BINARY
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: 'string', default: '10' },
    reps: { type: 'string', default: '5' },
    flood: { type: 'string', default: '20' },
    'no-build': { type: 'boolean', default: false },
  },
})
const duration = Number(args.duration)
const PASSWORD = 'correct horse battery staple'

async function run(command: string[], stdin?: string): Promise<string> {
  const proc = Bun.spawn(command, {
    stdin: stdin === undefined ? 'ignore' : new TextEncoder().encode(stdin),
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const out = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) throw new Error(`${command.join(' ')} failed`)
  return out.trim()
}

async function main() {
  await ensureWrk()
  buildBinary(args['no-build'])
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-auth-'))
  try {
    const data = join(dir, 'roster')
    await run(
      [
        roster,
        'users',
        'create',
        '--name',
        'Bench',
        '--email',
        'bench@example.com',
        '--password-stdin',
        '--data-dir',
        data,
      ],
      `${PASSWORD}\n`,
    )
    const server = await spawnServer(
      pinned(0, [
        roster,
        'serve',
        '--port',
        '0',
        '--data-dir',
        data,
        '--sync',
        'normal',
        '--log-file',
        join(dir, 'access.log'),
        '--trust-proxy',
      ]),
    )
    const baselineDb = join(dir, 'baseline.db')
    const db = new Database(baselineDb, { create: true })
    db.run(
      'CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)',
    )
    db.run(
      "INSERT INTO users (name, email, created_at, updated_at) VALUES ('Bench', 'bench@example.com', 'x', 'x')",
    )
    db.close()
    const baseline = await spawnServer(
      pinned(0, [process.execPath, join(ROOT, 'bench/baseline.ts'), baselineDb, '0', 'normal']),
    )
    try {
      const login = await fetch(`${server.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: 'bench@example.com', password: PASSWORD }).toString(),
      })
      const { access_token: token } = (await login.json()) as { access_token: string }
      const basicHeader = `Basic ${Buffer.from(`bench@example.com:${PASSWORD}`).toString('base64')}`
      const measure = async (url: string, path: string, header?: string) => {
        const headers = header === undefined ? [] : ['-H', `Authorization: ${header}`]
        await runWrk({ url, path, duration: 2, connections: 32, seeded: 1, extra: headers })
        const result = await runWrk({
          url,
          path,
          duration,
          connections: 32,
          seeded: 1,
          extra: headers,
        })
        if (result.errors > 0) throw new Error(`${path}: ${result.errors} errors`)
        return result
      }
      const scenarios = {
        me: () => measure(server.url, '/me', `Bearer ${token}`),
        secure: () => measure(server.url, '/secure', basicHeader),
        byId: () => measure(baseline.url, '/users/1'),
      }
      const names = Object.keys(scenarios) as (keyof typeof scenarios)[]
      const reps: Record<keyof typeof scenarios, Awaited<ReturnType<typeof measure>>>[] = []
      for (let rep = 0; rep < Number(args.reps); rep++) {
        const results = {} as Record<keyof typeof scenarios, Awaited<ReturnType<typeof measure>>>
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + rep) % names.length] as keyof typeof scenarios
          results[name] = await scenarios[name]()
        }
        reps.push(results)
        console.error(
          `rep ${rep + 1}: /secure÷/me ${(results.secure.rps / results.me.rps).toFixed(2)}, /me÷baseline ${(results.me.rps / results.byId.rps).toFixed(2)}`,
        )
      }
      const mid = (pick: (r: (typeof reps)[number]) => number) => median(reps.map(pick))
      const me = { rps: mid((r) => r.me.rps), p99Ms: mid((r) => r.me.p99Ms) }
      const secure = { rps: mid((r) => r.secure.rps), p99Ms: mid((r) => r.secure.p99Ms) }
      const byId = { rps: mid((r) => r.byId.rps), p99Ms: mid((r) => r.byId.p99Ms) }
      const secureRatio = mid((r) => r.secure.rps / r.me.rps)
      const meRatio = mid((r) => r.me.rps / r.byId.rps)
      const flood = await loginFlood(server.url, server.proc.pid, Number(args.flood))
      console.log(`| scenario | req/s | p99 ms |
|---|---|---|
| roster GET /me (Bearer) | ${me.rps.toFixed(0)} | ${me.p99Ms.toFixed(2)} |
| roster GET /secure (Basic) | ${secure.rps.toFixed(0)} | ${secure.p99Ms.toFixed(2)} |
| baseline GET /users/{id} | ${byId.rps.toFixed(0)} | ${byId.p99Ms.toFixed(2)} |

(medians of ${args.reps} repetitions × ${duration} s)
/secure ÷ /me: **${secureRatio.toFixed(2)}×** (target ≥ 0.5×)
/me ÷ baseline GET by id: **${meRatio.toFixed(2)}×** (target ≥ 0.6×)
login flood (200 connections, ${args.flood} s, every request runs argon2id): ${flood.logins} answers (${flood.statuses}); peak RSS **${flood.peakRssMb.toFixed(0)} MB** (target < 400 MB); /health answered ${flood.healthOk}/${flood.healthTotal} probes, median ${flood.healthMedianMs.toFixed(1)} ms, max ${flood.healthMaxMs.toFixed(1)} ms`)
    } finally {
      await server.stop()
      await baseline.stop()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function loginFlood(url: string, pid: number, seconds: number) {
  let peak = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, readRss(pid))
  }, 100)
  const health: number[] = []
  let healthTotal = 0
  let stop = false
  const prober = (async () => {
    while (!stop) {
      healthTotal += 1
      const started = performance.now()
      try {
        const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })
        if (response.status === 200) health.push(performance.now() - started)
      } catch {}
      await Bun.sleep(200)
    }
  })()
  const proc = Bun.spawn(
    pinned(1, [
      'wrk',
      '-t1',
      '-c200',
      `-d${seconds}s`,
      '--timeout',
      '10s',
      '-s',
      join(import.meta.dir, 'wrk/login-flood.lua'),
      url,
    ]),
    { stdout: 'pipe' },
  )
  const output = await new Response(proc.stdout).text()
  await proc.exited
  stop = true
  await prober
  clearInterval(sampler)
  const logins = Number(/(\d+) requests in/.exec(output)?.[1] ?? 0)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0)
  return {
    logins,
    statuses: `${non2xx} of them non-2xx, as expected: 401`,
    peakRssMb: peak / 1024,
    healthOk: health.length,
    healthTotal,
    healthMedianMs: median(health),
    healthMaxMs: Math.max(...health),
  }
}

await main()
