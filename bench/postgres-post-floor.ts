// How close POST /users and GET /users/{id} on PostgreSQL can come to the raw baseline
// (bench/postgres-baseline.ts: one INSERT into a table with one unique index; a read of five
// columns) at all: roster against the floor servers of
// bench/postgres-floor.ts, each writing into roster's own schema in one design, and into a
// "lean" copy of it without the indexes and the count that `q`, `sort` and `total` need
// (users_search_key_trgm, users_name_order_idx, users_email_order_idx, the count trigger). Each
// row of the table is a ceiling for any implementation that does at least that work. The read's
// floor reads a user as roster answers it (record, groups, ETag) in roster's statement.
// Usage: bun bench/postgres-post-floor.ts [--duration 3] [--reps 5] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { startPostgres } from '../scripts/postgres-server'
import { cpuSeconds, cpuSecondsOfCommand, median, type Spawned, spawnServer } from './lib/process'
import { BINARY, buildBinary } from './lib/roster'
import { ensureWrk, runWrk } from './lib/wrk'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    reps: { type: 'string', default: '5' },
    'no-build': { type: 'boolean', default: false },
  },
})
const SEEDED = 10_000
const LEAN = [
  'DROP INDEX users_search_key_trgm',
  'DROP INDEX users_name_order_idx',
  'DROP INDEX users_email_order_idx',
  'DROP TRIGGER users_counted_insert ON users',
]
const FLOORS = [
  { label: 'floor: the user only', mode: 'user', lean: false },
  { label: 'floor: the user and its event, one statement', mode: 'user-and-event', lean: false },
  {
    label: 'floor: the same with pg_notify',
    mode: 'user-and-event-notify',
    lean: false,
  },
  { label: 'floor: BEGIN, user, event, COMMIT', mode: 'transaction', lean: false },
  { label: 'floor: the user only, lean schema', mode: 'user', lean: true },
  { label: 'floor: the user and its event, lean schema', mode: 'user-and-event', lean: true },
] as const

async function seedRosterSchema(url: string) {
  const sql = new SQL(url, { max: 1 })
  const at = new Date().toISOString()
  await sql`INSERT INTO users (name, email, email_key, search_key, created_at, updated_at)
    SELECT 'User ' || i, 'user' || i || '@example.com', 'user' || i || '@example.com',
      'user ' || i || E'\n' || 'user' || i || '@example.com', ${at}, ${at}
    FROM generate_series(1, ${SEEDED}) AS i`
  await sql`VACUUM ANALYZE users`
  await sql.close()
}

interface Measured {
  labels: string[]
  rps: Map<string, number[]>
  cpu: Map<string, number[]>
  pgCpu: Map<string, number[]>
}

/** Each server in turn (the order reversed every other repetition), per repetition. */
async function measure(
  servers: { label: string; server: Spawned }[],
  scenario: { path: string; script: string },
): Promise<Measured> {
  const measured: Measured = {
    labels: servers.map(({ label }) => label),
    rps: new Map(),
    cpu: new Map(),
    pgCpu: new Map(),
  }
  const push = (map: Map<string, number[]>, label: string, value: number) =>
    map.set(label, [...(map.get(label) ?? []), value])
  for (let rep = 0; rep < Number(args.reps); rep += 1) {
    const order = rep % 2 === 0 ? servers : [...servers].reverse()
    for (const { label, server } of order) {
      const before = cpuSeconds(server.proc.pid)
      const pgBefore = cpuSecondsOfCommand('postgres')
      const result = await runWrk({
        url: server.url,
        ...scenario,
        duration: Number(args.duration),
        connections: 32,
        seeded: SEEDED,
      })
      push(measured.rps, label, result.rps)
      push(measured.cpu, label, ((cpuSeconds(server.proc.pid) - before) / result.requests) * 1e6)
      const pgSeconds = cpuSecondsOfCommand('postgres') - pgBefore
      push(measured.pgCpu, label, (pgSeconds / result.requests) * 1e6)
    }
    console.error(`${scenario.path} rep ${rep + 1} done`)
  }
  return measured
}

function table(title: string, { labels, rps, cpu, pgCpu }: Measured): string[] {
  const base = median(rps.get('baseline') ?? [])
  return [
    `| ${title} | req/s | × baseline | server CPU µs/request | PostgreSQL CPU µs/request |`,
    '|---|---|---|---|---|',
    ...labels.map((label) => {
      const own = median(rps.get(label) ?? [])
      return `| ${label} | ${own.toFixed(0)} | **${(own / base).toFixed(2)}×** | ${median(cpu.get(label) ?? []).toFixed(0)} | ${median(pgCpu.get(label) ?? []).toFixed(0)} |`
    }),
  ]
}

async function main() {
  buildBinary(args['no-build'])
  await ensureWrk()
  const postgres = await startPostgres({ durable: true, reapWith: process.pid })
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-pg-floor-'))
  const servers: { label: string; server: Spawned }[] = []
  const urlOf = (name: string) => {
    const url = new URL(postgres.url)
    url.pathname = `/${name}`
    return url.toString()
  }
  const rosterOn = (name: string) =>
    spawnServer([
      BINARY,
      'serve',
      '--port',
      '0',
      '--data-dir',
      join(dir, name),
      '--log-file',
      join(dir, `${name}.log`),
      '--database-url',
      urlOf(name),
    ])
  try {
    const admin = new SQL(postgres.url, { max: 1 })
    const names = ['roster', 'baseline', ...FLOORS.map((_, i) => `floor_${i}`)]
    for (const name of names) await admin.unsafe(`CREATE DATABASE ${name}`)
    await admin.close()

    servers.push({ label: 'roster', server: await rosterOn('roster') })
    await seedRosterSchema(urlOf('roster'))
    for (const [i, floor] of FLOORS.entries()) {
      const name = `floor_${i}`
      // roster migrates the schema, then makes way for the floor server.
      await (await rosterOn(name)).stop()
      if (floor.lean) {
        const sql = new SQL(urlOf(name), { max: 1 })
        for (const statement of LEAN) await sql.unsafe(statement)
        await sql.close()
      }
      await seedRosterSchema(urlOf(name))
      const command = [
        process.execPath,
        join(import.meta.dir, 'postgres-floor.ts'),
        urlOf(name),
        '0',
        floor.mode,
      ]
      servers.push({ label: floor.label, server: await spawnServer(command) })
    }
    const baselineCommand = [
      process.execPath,
      join(import.meta.dir, 'postgres-baseline.ts'),
      urlOf('baseline'),
      '0',
    ]
    servers.push({ label: 'baseline', server: await spawnServer(baselineCommand) })
    const baselineSql = new SQL(urlOf('baseline'), { max: 1 })
    await baselineSql`INSERT INTO users (name, email, created_at, updated_at)
      SELECT 'User ' || i, 'user' || i || '@example.com', now()::text, now()::text
      FROM generate_series(1, ${SEEDED}) AS i`
    await baselineSql.close()

    const post = await measure(servers, { path: '/users', script: 'create-user.lua' })
    // Reads do not depend on the write design: one floor server reads for all of them.
    const readers = servers.filter(({ label }) => label === 'roster' || label === 'baseline')
    const floorReader = servers.find(({ label }) => label === FLOORS[0].label)
    if (floorReader !== undefined)
      readers.splice(1, 0, { ...floorReader, label: 'floor: the record' })
    const get = await measure(readers, { path: '/users/1', script: 'random-user.lua' })
    const lines = [
      `PostgreSQL (fsync on), ${args.reps} repetition(s) × ${args.duration} s, 32 connections, ${SEEDED} seeded users per database`,
      '',
      ...table('POST /users', post),
      '',
      ...table('GET /users/{random id}', get),
    ]
    console.log(lines.join('\n'))
  } finally {
    for (const { server } of servers) await server.stop().catch(() => {})
    postgres.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
