// roster against a raw Bun.serve + bun:sqlite baseline, in the same run, as ratios; on /health
// and GET by id also the floor (bench/floor.ts): the contract's per-request work with no framework.
// Usage: bun bench/run.ts [--duration 10] [--reps 1] [--connections 32] [--roster-sync normal|full]
//                         [--baseline-sync normal|full] [--only a,b] [--no-build]
//                         [--against path/to/earlier/roster]
// --against runs a second roster binary (say, built from an earlier commit) in the same
// rotation, on its own copy of the seeded data: a before/after pair measured side by side.
// Servers run pinned to CPU 0, wrk to CPU 1. Results: a table on stdout, JSON in bench/results/.
import { Database } from 'bun:sqlite'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import {
  cpuSeconds,
  median,
  readRss,
  type Spawned,
  spawnServer,
  waitForHealth,
} from './lib/process'
import { ensureWrk, pinned, runWrk, type WrkResult } from './lib/wrk'

const root = join(import.meta.dir, '..')
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: 'string', default: '10' },
    reps: { type: 'string', default: '1' },
    connections: { type: 'string', default: '32' },
    'roster-sync': { type: 'string', default: 'normal' },
    'baseline-sync': { type: 'string', default: 'normal' },
    only: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    against: { type: 'string' },
  },
})
const SEEDED = 10_000
const duration = Number(args.duration)
const reps = Number(args.reps)
const connections = Number(args.connections)
// The same cursor roster hands out for the page after id 9000 (src/users/cursor.ts).
const cursorAt9000 = Buffer.from('a:9000').toString('base64url')

interface Scenario {
  name: string
  path: string
  script?: string
  /** bench/floor.ts answers it too. */
  floor?: boolean
}

const ALL_SCENARIOS: Scenario[] = [
  { name: 'GET /health', path: '/health', floor: true },
  {
    name: 'GET /users/{random id}',
    path: '/users/1',
    script: 'random-user.lua',
    floor: true,
  },
  { name: 'GET /users?limit=20', path: '/users?limit=20' },
  { name: 'GET /users?limit=20&offset=9000', path: '/users?limit=20&offset=9000' },
  { name: 'GET /v2/users?limit=20', path: '/v2/users?limit=20' },
  { name: 'GET /v2/users cursor at 9000', path: `/v2/users?limit=20&cursor=${cursorAt9000}` },
  { name: 'POST /users', path: '/users', script: 'create-user.lua' },
  { name: 'PATCH /users/{random id}', path: '/users/1', script: 'patch-user.lua' },
  { name: 'POST+DELETE /users (pairs)', path: '/users', script: 'create-delete-user.lua' },
]
const scenarios = args.only
  ? ALL_SCENARIOS.filter((s) => args.only?.split(',').some((part) => s.name.includes(part)))
  : ALL_SCENARIOS

const BASELINE_DDL = `CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`

const FLOOR_DDL = `CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1)`

/** The same 10,000 users in every database (roster's are already migrated). */
function seed(rosterDbs: string[], baselineDb: string, floorDb: string): void {
  const at = '2026-01-01T00:00:00.000Z'
  const targets: [string, string | null][] = [
    ...rosterDbs.map((path): [string, null] => [path, null]),
    [baselineDb, BASELINE_DDL],
    [floorDb, FLOOR_DDL],
  ]
  for (const [path, ddl] of targets) {
    const withKey = ddl === null
    const db = new Database(path, { create: true })
    if (ddl !== null) db.run(ddl)
    const insert = withKey
      ? db.query(
          'INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES (?1, ?2, ?2, ?3, ?3)',
        )
      : db.query('INSERT INTO users (name, email, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)')
    db.transaction(() => {
      for (let i = 1; i <= SEEDED; i++) insert.run(`User ${i}`, `user${i}@example.com`, at)
    })()
    db.close()
  }
}

function rosterServer(binary: string, dataDir: string, logFile: string) {
  return spawnServer(
    pinned(0, [
      binary,
      'serve',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--sync',
      String(args['roster-sync']),
      '--log-file',
      logFile,
    ]),
  )
}

async function startServers(dir: string) {
  const rosterData = join(dir, 'roster')
  const beforeData = join(dir, 'roster-before')
  const baselineDb = join(dir, 'baseline.db')
  const floorDb = join(dir, 'floor.db')
  await Bun.spawn([join(root, 'dist/roster'), 'migrate', '--data-dir', rosterData]).exited
  const rosterDbs = [join(rosterData, 'roster.db')]
  if (args.against) {
    await Bun.spawn([args.against, 'migrate', '--data-dir', beforeData]).exited
    rosterDbs.push(join(beforeData, 'roster.db'))
  }
  seed(rosterDbs, baselineDb, floorDb)
  const roster = await rosterServer(join(root, 'dist/roster'), rosterData, join(dir, 'access.log'))
  const before = args.against
    ? await rosterServer(args.against, beforeData, join(dir, 'access-before.log'))
    : undefined
  const baseline = await spawnServer(
    pinned(0, [
      process.execPath,
      join(root, 'bench/baseline.ts'),
      baselineDb,
      '0',
      String(args['baseline-sync']),
    ]),
  )
  const floor = await spawnServer(
    pinned(0, [
      process.execPath,
      join(root, 'bench/floor.ts'),
      floorDb,
      '0',
      join(dir, 'floor-access.log'),
    ]),
  )
  return { roster, baseline, floor, before }
}

/** Spawn to first 200 from /health, on an existing data dir (warm) and an empty one (cold). */
async function measureStartup(dir: string) {
  const warmDir = join(dir, 'startup-warm')
  await Bun.spawn([join(root, 'dist/roster'), 'migrate', '--data-dir', warmDir]).exited
  const warm: number[] = []
  const cold: number[] = []
  let idleRss = 0
  for (let i = 0; i < 7; i++) {
    for (const [target, list] of [
      [warmDir, warm],
      [join(dir, `startup-cold-${i}`), cold],
    ] as const) {
      const port = 20000 + Math.floor(Math.random() * 20000)
      const started = performance.now()
      const proc = Bun.spawn(
        [
          join(root, 'dist/roster'),
          'serve',
          '--port',
          String(port),
          '--data-dir',
          target,
          '--log-file',
          join(dir, 'startup.log'),
        ],
        { stdout: 'ignore', stderr: 'ignore' },
      )
      await waitForHealth(`http://127.0.0.1:${port}`, 2)
      list.push(performance.now() - started)
      if (target === warmDir && i === 6) {
        await Bun.sleep(1000)
        idleRss = readRss(proc.pid)
      }
      proc.kill('SIGTERM')
      await proc.exited
    }
  }
  return { warmMs: median(warm), coldMs: median(cold), idleRssMb: idleRss / 1024 }
}

interface Row {
  scenario: string
  baseline: WrkResult
  roster: WrkResult
  ratio: number
  floor?: WrkResult
  /** floor req/s over baseline req/s: the best ratio the contract's per-request work allows. */
  floorRatio?: number
  /** The --against binary, and its ratio to the baseline. */
  before?: WrkResult
  beforeRatio?: number
  /** CPU time per request of each server (µs): steadier than req/s on a shared VM. */
  cpuUs: Record<string, number>
}

/** roster_db_writes_total / roster_db_commits_total: how many writes an fsync served. */
async function writesPerCommit(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  const commits = value('roster_db_commits_total')
  return commits === 0 ? 0 : value('roster_db_writes_total') / commits
}

async function main() {
  await ensureWrk()
  if (!args['no-build']) {
    const build = Bun.spawnSync([process.execPath, 'run', 'build'], {
      cwd: root,
      stdout: 'ignore',
      stderr: 'inherit',
    })
    if (build.exitCode !== 0) throw new Error('build failed')
  }
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-'))
  const repetitions: Row[][] = []
  const rss: { afterLoadMb: number }[] = []
  const batching: number[] = []
  try {
    for (let rep = 0; rep < reps; rep++) {
      const repDir = join(dir, `rep-${rep}`)
      mkdirSync(repDir)
      const { roster, baseline, floor, before } = await startServers(repDir)
      const rows: Row[] = []
      try {
        for (const scenario of scenarios) {
          // Rotate which server goes first, so warm-up and drift do not favour one side.
          const servers: [string, Spawned][] = [
            ['baseline', baseline],
            ['roster', roster],
          ]
          if (scenario.floor) servers.push(['floor', floor])
          if (before) servers.push(['before', before])
          const order = servers.map(
            (_, i) => servers[(i + rep) % servers.length] as [string, Spawned],
          )
          const results: Record<string, WrkResult> = {}
          const cpuUs: Record<string, number> = {}
          for (const [name, server] of order) {
            await runWrk({
              url: server.url,
              path: scenario.path,
              script: scenario.script,
              duration: 2,
              connections,
              seeded: SEEDED,
            })
            const cpuBefore = cpuSeconds(server.proc.pid)
            const result = await runWrk({
              url: server.url,
              path: scenario.path,
              script: scenario.script,
              duration,
              connections,
              seeded: SEEDED,
            })
            results[name] = result
            cpuUs[name] = ((cpuSeconds(server.proc.pid) - cpuBefore) * 1e6) / result.requests
          }
          const row = {
            scenario: scenario.name,
            baseline: results.baseline as WrkResult,
            roster: results.roster as WrkResult,
            ratio: (results.roster as WrkResult).rps / (results.baseline as WrkResult).rps,
            floor: results.floor,
            floorRatio:
              results.floor === undefined
                ? undefined
                : results.floor.rps / (results.baseline as WrkResult).rps,
            before: results.before,
            beforeRatio:
              results.before === undefined
                ? undefined
                : results.before.rps / (results.baseline as WrkResult).rps,
            cpuUs,
          }
          rows.push(row)
          const floorText =
            (row.floorRatio === undefined ? '' : `, floor ratio ${row.floorRatio.toFixed(2)}`) +
            (row.beforeRatio === undefined ? '' : `, before ratio ${row.beforeRatio.toFixed(2)}`) +
            `; CPU µs/request ${Object.entries(cpuUs)
              .map(([name, us]) => `${name} ${us.toFixed(1)}`)
              .join(', ')}`
          console.error(
            `rep ${rep + 1}/${reps} ${row.scenario}: roster ${row.roster.rps.toFixed(0)} req/s, baseline ${row.baseline.rps.toFixed(0)} req/s, ratio ${row.ratio.toFixed(2)}${floorText}`,
          )
        }
        rss.push({ afterLoadMb: readRss(roster.proc.pid) / 1024 })
        batching.push(await writesPerCommit(roster.url))
      } finally {
        await roster.stop()
        await baseline.stop()
        await floor.stop()
        await before?.stop()
      }
      repetitions.push(rows)
    }
    const startup = await measureStartup(dir)
    report(repetitions, startup, rss, batching)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function report(
  repetitions: Row[][],
  startup: Awaited<ReturnType<typeof measureStartup>>,
  rss: { afterLoadMb: number }[],
  batching: number[],
) {
  const lines = [
    `roster vs raw Bun.serve + bun:sqlite, ${reps} repetition(s) × ${duration} s, ${connections} connections, ${SEEDED} seeded users, roster sync=${args['roster-sync']}, baseline sync=${args['baseline-sync']}`,
    '',
    `| scenario | baseline req/s | roster req/s | ratio (median of reps) | floor ratio | baseline p99 ms | roster p99 ms |${args.against ? ' before ratio | after ÷ before | CPU µs/request before → after |' : ''}`,
    `|---|---|---|---|---|---|---|${args.against ? '---|---|---|' : ''}`,
  ]
  const summary: Record<string, unknown>[] = []
  for (let i = 0; i < (repetitions[0]?.length ?? 0); i++) {
    const rows = repetitions.map((rep) => rep[i] as Row)
    const entry = {
      scenario: rows[0]?.scenario,
      baselineRps: median(rows.map((r) => r.baseline.rps)),
      rosterRps: median(rows.map((r) => r.roster.rps)),
      ratio: median(rows.map((r) => r.ratio)),
      ratios: rows.map((r) => Number(r.ratio.toFixed(3))),
      floorRatio: rows.every((r) => r.floorRatio !== undefined)
        ? median(rows.map((r) => r.floorRatio as number))
        : null,
      floorRatios: rows.map((r) =>
        r.floorRatio === undefined ? null : Number(r.floorRatio.toFixed(3)),
      ),
      beforeRatio: rows.every((r) => r.beforeRatio !== undefined)
        ? median(rows.map((r) => r.beforeRatio as number))
        : null,
      /** after ÷ before per repetition (both against the same baseline run), then the median. */
      change: rows.every((r) => r.beforeRatio !== undefined)
        ? median(rows.map((r) => r.ratio / (r.beforeRatio as number)))
        : null,
      cpuUs: Object.fromEntries(
        Object.keys(rows[0]?.cpuUs ?? {}).map((name) => [
          name,
          median(rows.map((r) => r.cpuUs[name] as number)),
        ]),
      ),
      baselineP99: median(rows.map((r) => r.baseline.p99Ms)),
      rosterP99: median(rows.map((r) => r.roster.p99Ms)),
      errors: rows.reduce((n, r) => n + r.roster.errors, 0),
    }
    summary.push(entry)
    lines.push(
      `| ${entry.scenario} | ${entry.baselineRps.toFixed(0)} | ${entry.rosterRps.toFixed(0)} | **${entry.ratio.toFixed(2)}×** | ${entry.floorRatio === null ? '–' : `${entry.floorRatio.toFixed(2)}×`} | ${entry.baselineP99.toFixed(2)} | ${entry.rosterP99.toFixed(2)} |${
        entry.beforeRatio === null || entry.change === null
          ? ''
          : ` ${entry.beforeRatio.toFixed(2)}× | ${entry.change.toFixed(3)} | ${entry.cpuUs.before?.toFixed(2)} → ${entry.cpuUs.roster?.toFixed(2)} |`
      }`,
    )
  }
  if (summary.some((s) => s.floorRatio !== null)) {
    lines.push(
      '',
      "floor ratio: bench/floor.ts (raw Bun.serve doing only the contract's per-request work: request id, API-Version, CORS, ETag, metrics, the access log) over the baseline; the most any framework could reach",
    )
  }
  const first = summary.find((s) => s.scenario === 'GET /v2/users?limit=20')
  const deep = summary.find((s) => s.scenario === 'GET /v2/users cursor at 9000')
  lines.push('')
  if (first && deep) {
    lines.push(
      `v2 cursor page at 9000 vs v2 first page (roster): ${((first.rosterRps as number) / (deep.rosterRps as number)).toFixed(2)}× the time per request`,
    )
  }
  lines.push(
    `spawn to first 200 (median of 7): ${startup.warmMs.toFixed(1)} ms on an existing data dir, ${startup.coldMs.toFixed(1)} ms on an empty one (migrations included)`,
  )
  lines.push(
    `idle RSS after start: ${startup.idleRssMb.toFixed(1)} MB; RSS after the load: ${median(rss.map((r) => r.afterLoadMb)).toFixed(1)} MB`,
  )
  if (batching.some((mean) => mean > 0)) {
    lines.push(
      `group commit: ${median(batching).toFixed(1)} writes per commit on average over a repetition (median of reps; from roster's /metrics)`,
    )
  }
  console.log(lines.join('\n'))
  mkdirSync(join(root, 'bench/results'), { recursive: true })
  writeFileSync(
    join(root, 'bench/results', `run-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
    JSON.stringify({ args, summary, startup, rss, batching, repetitions }, null, 2),
  )
}

await main()
