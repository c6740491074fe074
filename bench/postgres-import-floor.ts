// How fast an import into PostgreSQL can go at all with roster's schema: `roster users import`
// through the compiled binary against raw Bun.SQL running the import's own statement (10,000
// rows an `INSERT … SELECT FROM unnest(…)`, all in one transaction, no parsing or checks) on
// three schemas: roster's as migrated, without the trigram index that `q` reads
// (users_search_key_trgm), and "lean" (without it, the two order indexes and the count
// trigger). Each raw row is a ceiling for any import that keeps that schema in step.
// Usage: bun bench/postgres-import-floor.ts [--users 200000] [--reps 3] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { startPostgres } from '../scripts/postgres-server'
import { searchKeyOf } from '../src/users/search-key'
import { median } from './lib/process'
import { BINARY, buildBinary } from './lib/roster'

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '200000' },
    reps: { type: 'string', default: '3' },
    'no-build': { type: 'boolean', default: false },
  },
})
const size = Number(args.users)
const BATCH = 10_000
const WITHOUT_TRIGRAMS = ['DROP INDEX users_search_key_trgm']
const LEAN = [
  ...WITHOUT_TRIGRAMS,
  'DROP INDEX users_name_order_idx',
  'DROP INDEX users_email_order_idx',
  'DROP TRIGGER users_counted_insert ON users',
]
const SCHEMAS = [
  { label: "roster's schema", drop: [] as string[] },
  { label: 'without the trigram index', drop: WITHOUT_TRIGRAMS },
  { label: 'lean', drop: LEAN },
]

const padded = (i: number) => String(i).padStart(7, '0')
const people = Array.from({ length: size }, (_, n) => ({
  name: `Person ${padded(n + 1)}`,
  email: `user${padded(n + 1)}@example.com`,
}))

async function run(command: string[]): Promise<number> {
  const started = performance.now()
  const proc = Bun.spawn([BINARY, ...command], { stdout: 'pipe', stderr: 'pipe' })
  if ((await proc.exited) !== 0) {
    throw new Error(`${command.join(' ')}: ${await new Response(proc.stderr).text()}`)
  }
  return (performance.now() - started) / 1000
}

/** The import's statement (backends/postgres/users.ts, insertPlain), batch by batch. */
async function rawImport(url: string): Promise<number> {
  const sql = new SQL(url, { max: 1 })
  const started = performance.now()
  const at = new Date().toISOString()
  await sql.begin(async (tx) => {
    for (let start = 0; start < size; start += BATCH) {
      const rows = people.slice(start, start + BATCH)
      await tx`
        INSERT INTO users (name, email, email_key, username, username_key, password_hash,
          created_at, updated_at, search_key)
        SELECT name, email, email_key, email, email_key, NULL, ${at}::timestamptz,
          ${at}::timestamptz, search_key
        FROM unnest(${rows.map((row) => row.name)}::text[], ${rows.map((row) => row.email)}::text[],
                    ${rows.map((row) => row.email.toLowerCase())}::text[],
                    ${rows.map((row) => searchKeyOf(row.name, row.email))}::text[])
          AS given(name, email, email_key, search_key)`
    }
  })
  const seconds = (performance.now() - started) / 1000
  await sql.close()
  return size / seconds
}

async function main() {
  buildBinary(args['no-build'])
  const postgres = await startPostgres({ durable: true, reapWith: process.pid })
  const dir = mkdtempSync(join(tmpdir(), 'roster-import-floor-'))
  try {
    const file = join(dir, 'users.jsonl')
    await Bun.write(file, people.map((person) => `${JSON.stringify(person)}\n`).join(''))
    const admin = new SQL(postgres.url, { max: 1 })
    let databases = 0
    const freshDatabase = async (drop: string[]) => {
      const url = new URL(postgres.url)
      url.pathname = `/import_${databases++}`
      await admin.unsafe(`CREATE DATABASE ${url.pathname.slice(1)}`)
      await run(['migrate', '--database-url', url.toString()])
      const sql = new SQL(url.toString(), { max: 1 })
      for (const statement of drop) await sql.unsafe(statement)
      await sql.close()
      return url.toString()
    }
    const rates = new Map<string, number[]>()
    const push = (label: string, rate: number) =>
      rates.set(label, [...(rates.get(label) ?? []), rate])
    for (let rep = 0; rep < Number(args.reps); rep++) {
      const url = await freshDatabase([])
      push(
        'roster users import',
        size / (await run(['users', 'import', file, '--database-url', url])),
      )
      for (const schema of SCHEMAS)
        push(`raw, ${schema.label}`, await rawImport(await freshDatabase(schema.drop)))
      console.error(`rep ${rep + 1} done`)
    }
    await admin.close()
    console.log(
      `Import of ${size.toLocaleString('en-US')} users into an empty PostgreSQL database (fsync on), median of ${args.reps}\n`,
    )
    console.log('| import | rows/s |\n|---|---|')
    for (const [label, values] of rates) {
      console.log(`| ${label} | ${Math.round(median(values)).toLocaleString('en-US')} |`)
    }
  } finally {
    postgres.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
