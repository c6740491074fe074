// Import benchmark: `roster users import` of 100,000 users (JSON Lines and CSV) through the
// compiled binary into a fresh data dir, against a raw bun:sqlite baseline that inserts the
// same rows in one transaction with no parsing checks. Wall time, median of --reps.
// Usage: bun bench/import.ts [--users 100000] [--reps 3] [--no-build]
import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median } from './lib/process'
import { BINARY, buildBinary } from './lib/roster'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    users: { type: 'string', default: '100000' },
    reps: { type: 'string', default: '3' },
    'no-build': { type: 'boolean', default: false },
  },
})
const count = Number(args.users)

function baseline(path: string, dbPath: string): number {
  const started = performance.now()
  const db = new Database(dbPath, { create: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = FULL')
  db.run(
    'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, email_key TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)',
  )
  const insert = db.query(
    'INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)',
  )
  const text = readFileSync(path, 'utf8')
  const at = new Date().toISOString()
  db.transaction(() => {
    for (const line of text.split('\n')) {
      if (line === '') continue
      const { name, email } = JSON.parse(line) as { name: string; email: string }
      insert.run(name, email, email.toLowerCase(), at)
    }
  })()
  db.close()
  return performance.now() - started
}

async function roster(file: string, dataDir: string): Promise<number> {
  const started = performance.now()
  const proc = Bun.spawn([BINARY, 'users', 'import', file, '--data-dir', dataDir], {
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const out = await new Response(proc.stdout).text()
  if (
    (await proc.exited) !== 0 ||
    !out.startsWith(`imported ${count.toLocaleString('en-US')} users`)
  ) {
    throw new Error(`import failed: ${out}`)
  }
  return performance.now() - started
}

async function main() {
  buildBinary(args['no-build'])
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-import-'))
  try {
    const jsonl = join(dir, 'users.jsonl')
    const csv = join(dir, 'users.csv')
    const rows = Array.from({ length: count }, (_, i) => ({
      name: `User ${i}, Jr.`,
      email: `user${i}@example.com`,
    }))
    await Bun.write(jsonl, `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`)
    await Bun.write(
      csv,
      `name,email\r\n${rows.map((row) => `"${row.name}",${row.email}`).join('\r\n')}\r\n`,
    )
    const times = { jsonl: [] as number[], csv: [] as number[], baseline: [] as number[] }
    for (let rep = 0; rep < Number(args.reps); rep++) {
      times.baseline.push(baseline(jsonl, join(dir, `baseline-${rep}.db`)))
      times.jsonl.push(await roster(jsonl, join(dir, `jsonl-${rep}`)))
      times.csv.push(await roster(csv, join(dir, `csv-${rep}`)))
    }
    const s = (ms: number) => (ms / 1000).toFixed(2)
    const b = median(times.baseline)
    console.log(`Importing ${count.toLocaleString('en-US')} users into a fresh data dir (median of ${args.reps}, wall time including process start):

| | seconds | × baseline |
|---|---|---|
| baseline (raw bun:sqlite, one transaction, no checks) | ${s(b)} | 1.00 |
| roster users import (JSON Lines) | **${s(median(times.jsonl))}** | ${(median(times.jsonl) / b).toFixed(2)} |
| roster users import (CSV) | **${s(median(times.csv))}** | ${(median(times.csv) / b).toFixed(2)} |

Target: under 10 s.`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
