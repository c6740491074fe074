// Two roster binaries side by side in short alternating slices, for a before/after on a machine
// whose speed drifts: each slice of one is paired with the adjacent slice of the other, and the
// figure is the median of the pairs' ratios (CPU per request from /proc, and requests per
// second). Each server has its own copy of 10,000 seeded users, pinned to CPU 0; wrk on CPU 1.
// Usage: bun bench/pair.ts BEFORE_BINARY [AFTER_BINARY=dist/roster] [--slices 30] [--seconds 2]
//          [--only POST,PATCH]
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { hashPassword } from '../src/auth/passwords'
import { cpuSeconds, median, spawnServer } from './lib/process'
import { ensureWrk, pinned, runWrk } from './lib/wrk'

const { values: args, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: {
    slices: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '2' },
    only: { type: 'string' },
  },
})
const root = join(import.meta.dir, '..')
const [beforeBinary, afterBinary = join(root, 'dist/roster')] = positionals
if (beforeBinary === undefined) throw new Error('usage: bun bench/pair.ts BEFORE [AFTER]')
const SCENARIOS = [
  { name: 'GET /users/{random id}', path: '/users/1', script: 'random-user.lua' },
  { name: 'GET /users?limit=20', path: '/users?limit=20' },
  { name: 'POST /users', path: '/users', script: 'create-user.lua' },
  { name: 'PATCH /users/{random id}', path: '/users/1', script: 'patch-user.lua' },
  { name: 'POST+DELETE /users (pairs)', path: '/users', script: 'create-delete-user.lua' },
  // The seeded bench account's sign-ins: argon2id, then a session and a token written.
  // Four connections: more sign-ins of one account at once than the limiter lets check (10) are
  // answered 429 without argon2, and would measure the refusal instead.
  { name: 'POST /login', path: '/login', script: 'login.lua', connections: 4 },
  { name: 'GET /secure (Basic, cached)', path: '/secure', script: 'basic.lua' },
  // An API key's check (its lookup, with the user that made it since issue 52), on a small list.
  { name: 'GET /api-keys (API key)', path: '/api-keys?limit=1', withKey: true },
].filter((s) => args.only === undefined || args.only.split(',').some((p) => s.name.includes(p)))

await ensureWrk()
const BENCH_HASH = await hashPassword('bench passphrase')
const dir = mkdtempSync(join(tmpdir(), 'roster-pair-'))

async function start(binary: string, name: string) {
  const data = join(dir, name)
  await Bun.spawn([binary, 'migrate', '--data-dir', data], { stdout: 'ignore' }).exited
  const db = new Database(join(data, 'roster.db'))
  const insert = db.query(
    'INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES (?1, ?2, ?2, ?3, ?3)',
  )
  db.transaction(() => {
    for (let i = 1; i <= 10_000; i++)
      insert.run(`User ${i}`, `user${i}@example.com`, '2026-01-01T00:00:00.000Z')
  })()
  // One account with a password (roster's own hash, so no sign-in rehashes it) for the login
  // and Basic scenarios.
  db.query(
    `INSERT INTO users (name, email, email_key, password_hash, created_at, updated_at)
     VALUES ('Bench', 'bench@example.com', 'bench@example.com', ?1, ?2, ?2)`,
  ).run(BENCH_HASH, '2026-01-01T00:00:00.000Z')
  db.close()
  // A key of the command line's (`*`), for the API key scenario: printed alone on stdout.
  const made = Bun.spawn([binary, 'keys', 'create', '--name', 'bench', '--data-dir', data], {
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const key = (await new Response(made.stdout).text()).trim()
  const server = await spawnServer(
    pinned(0, [
      binary,
      'serve',
      '--port',
      '0',
      '--data-dir',
      data,
      '--sync',
      'normal',
      '--log-file',
      join(dir, `${name}.log`),
    ]),
  )
  return Object.assign(server, { key })
}

const servers = [await start(beforeBinary, 'before'), await start(afterBinary, 'after')]
try {
  console.log(
    `| scenario | after ÷ before, req/s | after ÷ before, CPU per request | CPU µs/request before → after |`,
  )
  console.log('|---|---|---|---|')
  for (const scenario of SCENARIOS) {
    const rows: { rps: number; cpu: number }[][] = [[], []]
    for (let slice = 0; slice < Number(args.slices); slice++) {
      // Alternate which goes first, so neither always follows the other.
      const order = slice % 2 === 0 ? [0, 1] : [1, 0]
      for (const i of order) {
        const server = servers[i] as (typeof servers)[number]
        const cpu0 = cpuSeconds(server.proc.pid)
        const result = await runWrk({
          url: server.url,
          path: scenario.path,
          duration: Number(args.seconds),
          connections: (scenario as { connections?: number }).connections ?? 32,
          script: scenario.script,
          seeded: 10_000,
          extra: (scenario as { withKey?: boolean }).withKey
            ? ['-H', `X-API-Key: ${server.key}`]
            : [],
        })
        const cpu = cpuSeconds(server.proc.pid) - cpu0
        rows[i]?.push({ rps: result.rps, cpu: (cpu * 1e6) / Math.max(1, result.requests) })
      }
    }
    const [before, after] = rows as [(typeof rows)[0], (typeof rows)[0]]
    const rpsRatio = median(after.map((a, i) => a.rps / (before[i] as { rps: number }).rps))
    const cpuRatio = median(after.map((a, i) => a.cpu / (before[i] as { cpu: number }).cpu))
    console.log(
      `| ${scenario.name} | ${rpsRatio.toFixed(3)} | ${cpuRatio.toFixed(3)} | ${median(before.map((b) => b.cpu)).toFixed(1)} → ${median(after.map((a) => a.cpu)).toFixed(1)} |`,
    )
  }
} finally {
  for (const server of servers) await server.stop()
  rmSync(dir, { recursive: true, force: true })
}
