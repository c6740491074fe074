// A million users: the same requests against a small and a large roster, on SQLite and on
// PostgreSQL, each filled with `roster users import` through the compiled binary (issue 34's
// method). Per request the median latency of --requests sequential requests after a warm-up, for
// --reps repetitions (the median of those); the ratio large / small; and import rows per second.
// Usage: bun bench/scale.ts [--users 1000000] [--small 10000] [--backend both|sqlite|postgres]
//                           [--reps 7] [--requests 40] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { startPostgres } from '../scripts/postgres-server'
import { median, type Spawned, spawnServer } from './lib/process'
import { BINARY, buildBinary } from './lib/roster'

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '1000000' },
    small: { type: 'string', default: '10000' },
    backend: { type: 'string', default: 'both' },
    reps: { type: 'string', default: '7' },
    requests: { type: 'string', default: '40' },
    'no-build': { type: 'boolean', default: false },
  },
})
const sizes = [Number(args.small), Number(args.users)]
const reps = Number(args.reps)
const requests = Number(args.requests)

/** Seven digits, so `q=0007777` names one user at a million (as the outside review asked). */
const padded = (i: number) => String(i).padStart(7, '0')

/** The requests measured, given the roster's size (ids in the middle of it). */
function scenarios(size: number): { name: string; path: string }[] {
  const middle = Math.floor(size / 2)
  return [
    { name: 'GET /users?limit=20', path: '/users?limit=20' },
    { name: 'GET /v2/users?limit=20', path: '/v2/users?limit=20' },
    { name: 'GET /v2/users?limit=20&count=none', path: '/v2/users?limit=20&count=none' },
    { name: 'GET /v2/users?q=0007777', path: '/v2/users?q=0007777' },
    { name: 'GET /v2/users?q=person 00077', path: '/v2/users?q=person%2000077' },
    { name: 'GET /users/{id}', path: `/users/${middle}` },
    {
      name: 'GET /v2/users?email=',
      path: `/v2/users?email=user${padded(middle)}@example.com`,
    },
  ]
}

async function writeUsers(size: number): Promise<string> {
  const path = join(tmpdir(), `roster-scale-${size}.jsonl`)
  const file = Bun.file(path)
  if ((await file.exists()) && file.size > 0) return path
  const writer = file.writer()
  for (let i = 1; i <= size; i++) {
    writer.write(`{"name":"Person ${padded(i)}","email":"user${padded(i)}@example.com"}\n`)
  }
  await writer.end()
  return path
}

/** Runs a roster command to its end; answers its wall time in seconds. */
async function timed(command: string[]): Promise<number> {
  const started = performance.now()
  const proc = Bun.spawn([BINARY, ...command], { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) {
    throw new Error(`${command[0]} failed: ${out} ${await new Response(proc.stderr).text()}`)
  }
  return (performance.now() - started) / 1000
}

/** Median latency (ms) of sequential requests, after a warm-up. */
async function latency(base: string, path: string): Promise<number> {
  for (let i = 0; i < 5; i++) await (await fetch(base + path)).arrayBuffer()
  const times: number[] = []
  for (let i = 0; i < requests; i++) {
    const started = performance.now()
    const reply = await fetch(base + path)
    await reply.arrayBuffer()
    if (reply.status !== 200) throw new Error(`${path}: ${reply.status}`)
    times.push(performance.now() - started)
  }
  return median(times)
}

interface Measured {
  importRate: number
  /** Seconds `roster migrate` took to bring the search index up to date after the import. */
  indexSeconds: number
  latency: Map<string, number>
}

async function measure(size: number, target: string[], serve: string[]): Promise<Measured> {
  const importRate = size / (await timed(['users', 'import', await writeUsers(size), ...target]))
  // SQLite indexes new users when a server is idle; migrate does it now (PostgreSQL: nothing).
  const indexSeconds = await timed(['migrate', ...target])
  const server: Spawned = await spawnServer([BINARY, 'serve', '--port', '0', ...serve])
  try {
    const base = server.url
    const measured = new Map<string, number[]>()
    for (let rep = 0; rep < reps; rep++) {
      for (const scenario of scenarios(size)) {
        const one = await latency(base, scenario.path)
        measured.set(scenario.name, [...(measured.get(scenario.name) ?? []), one])
      }
    }
    const medians = new Map<string, number>()
    for (const [name, values] of measured) medians.set(name, median(values))
    return { importRate, indexSeconds, latency: medians }
  } finally {
    await server.stop()
  }
}

async function sqliteRun(size: number): Promise<Measured> {
  const dataDir = mkdtempSync(join(tmpdir(), 'roster-scale-'))
  try {
    return await measure(size, ['--data-dir', dataDir], ['--data-dir', dataDir])
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function postgresRuns(): Promise<Measured[]> {
  const postgres = await startPostgres({ durable: true, reapWith: process.pid })
  try {
    const admin = new SQL(postgres.url, { max: 1 })
    const results: Measured[] = []
    for (const size of sizes) {
      const name = `roster_scale_${size}`
      await admin.unsafe(`CREATE DATABASE ${name}`)
      const url = new URL(postgres.url)
      url.pathname = `/${name}`
      const dataDir = mkdtempSync(join(tmpdir(), 'roster-scale-pg-'))
      const target = ['--database-url', url.toString()]
      results.push(await measure(size, target, [...target, '--data-dir', dataDir]))
      rmSync(dataDir, { recursive: true, force: true })
    }
    await admin.close()
    return results
  } finally {
    await postgres.stop()
  }
}

function report(backend: string, [small, large]: Measured[]): void {
  if (small === undefined || large === undefined) return
  const [smallSize, largeSize] = sizes.map((n) => n.toLocaleString('en-US'))
  console.log(`\n${backend}: median latency, ${smallSize} → ${largeSize} users (${reps} reps)`)
  console.log(`| request | ${smallSize} | ${largeSize} | ratio |`)
  console.log('|---|---|---|---|')
  for (const [name, at] of small.latency) {
    const atLarge = large.latency.get(name) ?? Number.NaN
    console.log(
      `| ${name} | ${at.toFixed(2)} ms | ${atLarge.toFixed(2)} ms | ×${(atLarge / at).toFixed(2)} |`,
    )
  }
  const rate = (m: Measured) => `${Math.round(m.importRate).toLocaleString('en-US')} rows/s`
  console.log(`| roster users import | ${rate(small)} | ${rate(large)} | |`)
  const indexed = (m: Measured) => `${m.indexSeconds.toFixed(1)} s`
  console.log(
    `| roster migrate after it (search index) | ${indexed(small)} | ${indexed(large)} | |`,
  )
}

buildBinary(args['no-build'])
if (args.backend !== 'postgres') {
  const results: Measured[] = []
  for (const size of sizes) results.push(await sqliteRun(size))
  report('SQLite', results)
}
if (args.backend !== 'sqlite') report('PostgreSQL', await postgresRuns())
