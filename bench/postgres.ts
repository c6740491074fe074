// roster on PostgreSQL against a raw Bun.serve + Bun.SQL server on the same PostgreSQL (same
// routes, same seeded users), alternating in the same run; then two roster instances behind
// haproxy against one. On this 2-core machine the second shows what the balancer costs, not
// scaling: the instances, PostgreSQL, haproxy and wrk share two cores.
// Usage: bun bench/postgres.ts [--duration 3] [--reps 5] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { freePort, startPostgres } from '../scripts/postgres-server'
import { startBalancer } from '../test/helpers/cluster'
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
const duration = Number(args.duration)
const reps = Number(args.reps)
const SEEDED = 10_000
const CONNECTIONS = 32

const SCENARIOS = [
  { name: 'GET /users/{random id}', path: '/users/1', script: 'random-user.lua' },
  { name: 'GET /users?limit=20', path: '/users?limit=20' },
  { name: 'POST /users', path: '/users', script: 'create-user.lua' },
]

async function seed(url: string, roster: boolean) {
  const sql = new SQL(url, { max: 1 })
  const at = new Date().toISOString()
  if (roster) {
    await sql`INSERT INTO users (name, email, email_key, created_at, updated_at)
      SELECT 'User ' || i, 'user' || i || '@example.com', 'user' || i || '@example.com', ${at}, ${at}
      FROM generate_series(1, ${SEEDED}) AS i`
  } else {
    await sql`INSERT INTO users (name, email, created_at, updated_at)
      SELECT 'User ' || i, 'user' || i || '@example.com', ${at}, ${at}
      FROM generate_series(1, ${SEEDED}) AS i`
  }
  await sql`VACUUM ANALYZE users`
  await sql.close()
}

async function main() {
  buildBinary(args['no-build'])
  await ensureWrk()
  const postgres = await startPostgres({ durable: true, reapWith: process.pid })
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-pg-'))
  const servers: Spawned[] = []
  let haproxy: ReturnType<typeof Bun.spawn> | null = null
  try {
    const admin = new SQL(postgres.url, { max: 1 })
    await admin`CREATE DATABASE roster_bench`
    await admin`CREATE DATABASE baseline_bench`
    await admin.close()
    const urlOf = (name: string) => {
      const url = new URL(postgres.url)
      url.pathname = `/${name}`
      return url.toString()
    }
    const rosterUrl = urlOf('roster_bench')
    const rosterServe = (port: number, name: string) =>
      spawnServer([
        BINARY,
        'serve',
        '--port',
        String(port),
        '--data-dir',
        join(dir, name),
        '--log-file',
        join(dir, `${name}.log`),
        '--database-url',
        rosterUrl,
      ])
    const roster = await rosterServe(0, 'one')
    servers.push(roster)
    const baseline = await spawnServer([
      process.execPath,
      join(import.meta.dir, 'postgres-baseline.ts'),
      urlOf('baseline_bench'),
      '0',
    ])
    servers.push(baseline)
    await seed(rosterUrl, true)
    await seed(urlOf('baseline_bench'), false)

    const lines: string[] = [
      `roster on PostgreSQL (a throwaway server, fsync on) vs raw Bun.serve + Bun.SQL, ${reps} repetition(s) × ${duration} s, ${CONNECTIONS} connections, ${SEEDED} seeded users`,
      '',
      '| scenario | baseline req/s | roster req/s | ratio (median of reps) | per rep | target | server CPU µs/request baseline → roster | PostgreSQL CPU µs/request baseline → roster |',
      '|---|---|---|---|---|---|---|---|',
    ]
    for (const scenario of SCENARIOS) {
      const perRequest = (by: Map<Spawned, number[]>) =>
        `${median(by.get(baseline) ?? []).toFixed(0)} → ${median(by.get(roster) ?? []).toFixed(0)}`
      const ratios: number[] = []
      const base: number[] = []
      const ours: number[] = []
      // CPU per answered request: the server process's own, and PostgreSQL's (all its processes;
      // only one server runs at a time).
      const cpu = new Map<Spawned, number[]>([
        [baseline, []],
        [roster, []],
      ])
      const pgCpu = new Map<Spawned, number[]>([
        [baseline, []],
        [roster, []],
      ])
      for (let rep = 0; rep < reps; rep += 1) {
        const order = rep % 2 === 0 ? [baseline, roster] : [roster, baseline]
        const results = new Map<Spawned, number>()
        for (const server of order) {
          const before = cpuSeconds(server.proc.pid)
          const pgBefore = cpuSecondsOfCommand('postgres')
          const result = await runWrk({
            url: server.url,
            path: scenario.path,
            script: scenario.script,
            duration,
            connections: CONNECTIONS,
            seeded: SEEDED,
          })
          results.set(server, result.rps)
          cpu.get(server)?.push(((cpuSeconds(server.proc.pid) - before) / result.requests) * 1e6)
          pgCpu
            .get(server)
            ?.push(((cpuSecondsOfCommand('postgres') - pgBefore) / result.requests) * 1e6)
        }
        base.push(results.get(baseline) ?? 0)
        ours.push(results.get(roster) ?? 0)
        ratios.push((results.get(roster) ?? 0) / (results.get(baseline) ?? 1))
        console.error(`${scenario.name} rep ${rep + 1}: ratio ${ratios.at(-1)?.toFixed(2)}`)
      }
      const target = scenario.name.startsWith('POST') ? '≥ 0.8×' : '≥ 0.7×'
      lines.push(
        `| ${scenario.name} | ${median(base).toFixed(0)} | ${median(ours).toFixed(0)} | **${median(ratios).toFixed(2)}×** | ${ratios.map((r) => r.toFixed(2)).join(' ')} | ${target} | ${perRequest(cpu)} | ${perRequest(pgCpu)} |`,
      )
    }

    // Two instances behind haproxy against the one above (same database).
    const ports = [await freePort(), await freePort()]
    for (const [i, port] of ports.entries()) servers.push(await rosterServe(port, `two-${i}`))
    const listen = await freePort()
    haproxy = startBalancer('haproxy', listen, ports, dir, 'roundrobin')
    const balanced = `http://127.0.0.1:${listen}`
    for (let tries = 0; tries < 100; tries += 1) {
      if ((await fetch(`${balanced}/health`).catch(() => null))?.status === 200) break
      await Bun.sleep(100)
    }
    lines.push(
      '',
      '| scenario | one instance req/s | two behind haproxy req/s | ratio (median) |',
      '|---|---|---|---|',
    )
    for (const scenario of SCENARIOS.filter((s) => !s.path.includes('limit'))) {
      const one: number[] = []
      const two: number[] = []
      for (let rep = 0; rep < reps; rep += 1) {
        const run = (url: string) =>
          runWrk({
            url,
            path: scenario.path,
            script: scenario.script,
            duration,
            connections: CONNECTIONS,
            seeded: SEEDED,
          }).then((result) => result.rps)
        if (rep % 2 === 0) {
          one.push(await run(roster.url))
          two.push(await run(balanced))
        } else {
          two.push(await run(balanced))
          one.push(await run(roster.url))
        }
      }
      const ratios = one.map((value, i) => (two[i] ?? 0) / value)
      lines.push(
        `| ${scenario.name} | ${median(one).toFixed(0)} | ${median(two).toFixed(0)} | ${median(ratios).toFixed(2)}× |`,
      )
    }
    console.log(lines.join('\n'))
  } finally {
    haproxy?.kill('SIGKILL')
    for (const server of servers) await server.stop().catch(() => {})
    postgres.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
