// What a user's INSERT and DELETE cost in SQLite alone under two binaries' schemas: no server,
// no JavaScript around the statements. Each binary migrates its own data directory; the script
// seeds 10,000 users, then times batches of 18 inserts and of 18 deletes, each batch one
// transaction with its COMMIT (as the group commit writes them), alternating the schemas in
// rounds. The statements are built from the columns each schema's `users` table has, so the
// figure is the schema's share of a write: its columns, indexes, triggers and the foreign keys
// that point at a user (a deletion visits every child table). The second schema is timed once
// more with foreign keys off, to show that part on its own.
// Usage: bun bench/schema-writes.ts BEFORE_BINARY [AFTER_BINARY=dist/roster] [--rounds 7]
import { Database } from 'bun:sqlite'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median } from './lib/process'
import { BINARY } from './lib/roster'

const { values: args, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '7' } },
})
const [beforeBinary, afterBinary = BINARY] = positionals
if (beforeBinary === undefined) throw new Error('usage: bun bench/schema-writes.ts BEFORE [AFTER]')

const SEEDED = 10_000
const BATCH = 18
const BATCHES = 300
const NOW = '2026-01-01T00:00:00.000Z'
// The columns a user record is read with, where the schema has them (users.ts's RECORD_COLUMNS).
const RECORD = [
  'id',
  'name',
  'email',
  'username',
  'active',
  'created_at',
  'updated_at',
  'role',
  'email_verified_at',
  'version',
]

interface Schema {
  label: string
  file: string
  foreignKeys: boolean
  insert: string
}

const work = mkdtempSync(join(tmpdir(), 'roster-schema-writes-'))
try {
  const before = await migrated('before', beforeBinary)
  const after = await migrated('after', afterBinary)
  const schemas: Schema[] = [
    before,
    after,
    { ...after, label: 'after, foreign keys off', foreignKeys: false },
  ]
  const runs = schemas.map((schema) => ({ schema, insert: [] as number[], remove: [] as number[] }))
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const run of runs) {
      const measured = timeWrites(run.schema)
      run.insert.push(measured.insert)
      run.remove.push(measured.remove)
    }
  }
  console.log(`| schema | INSERT µs | DELETE µs |\n|---|---|---|`)
  for (const { schema, insert, remove } of runs) {
    console.log(`| ${schema.label} | ${median(insert).toFixed(2)} | ${median(remove).toFixed(2)} |`)
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}

/** A binary's schema, migrated and seeded, with the INSERT its columns allow. */
async function migrated(label: string, binary: string): Promise<Schema> {
  const dir = join(work, label)
  const migrate = Bun.spawn([binary, 'migrate', '--data-dir', dir], { stdout: 'ignore' })
  if ((await migrate.exited) !== 0) throw new Error(`${binary} migrate failed`)
  const file = join(dir, 'roster.db')
  const db = new Database(file)
  const columns = new Set(
    db
      .query<{ name: string }, []>("SELECT name FROM pragma_table_info('users')")
      .all()
      .map((c) => c.name),
  )
  const values: Record<string, string> = {
    name: '?1',
    email: '?2',
    email_key: '?2',
    username: '?2',
    username_key: '?2',
    active: '1',
    role: "'member'",
    search_key: "lower(?1 || ' ' || ?2)",
    created_at: '?3',
    updated_at: '?3',
  }
  const names = Object.keys(values).filter((c) => columns.has(c))
  const returning = RECORD.filter((c) => columns.has(c))
  const insert = `INSERT INTO users (${names.join(', ')}) VALUES (${names.map((c) => values[c]).join(', ')})`
  const seed = db.query<unknown, [string, string, string]>(insert)
  db.transaction(() => {
    for (let i = 1; i <= SEEDED; i++) seed.run(`User ${i}`, `user${i}@example.com`, NOW)
  })()
  // Where the search index exists, it has indexed the seeded users, as it would have in a server.
  if (db.query("SELECT 1 FROM sqlite_master WHERE name = 'users_indexed'").get() !== null) {
    db.run(
      'UPDATE users_indexed SET through = (SELECT max(id) FROM users), users = (SELECT count(*) FROM users) WHERE id = 1',
    )
  }
  db.close()
  return { label, file, foreignKeys: true, insert: `${insert} RETURNING ${returning.join(', ')}` }
}

/** µs per INSERT and per DELETE, each batch one transaction with its COMMIT, on a fresh copy. */
function timeWrites(schema: Schema): { insert: number; remove: number } {
  const copy = join(work, 'run.db')
  for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true })
  copyFileSync(schema.file, copy)
  const db = new Database(copy)
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = NORMAL')
  db.run(`PRAGMA foreign_keys = ${schema.foreignKeys ? 'ON' : 'OFF'}`)
  const insert = db.query<{ id: number }, [string, string, string]>(schema.insert)
  const remove = db.query<unknown, [number]>('DELETE FROM users WHERE id = ?')
  let inserting = 0
  let removing = 0
  for (let b = 0; b < BATCHES; b++) {
    let started = Bun.nanoseconds()
    const ids = db.transaction(() =>
      Array.from(
        { length: BATCH },
        (_, i) => insert.get(`New ${b} ${i}`, `new${b}-${i}@example.com`, NOW)?.id ?? 0,
      ),
    )()
    inserting += Bun.nanoseconds() - started
    started = Bun.nanoseconds()
    db.transaction(() => {
      for (const id of ids) remove.run(id)
    })()
    removing += Bun.nanoseconds() - started
  }
  db.close()
  const writes = BATCH * BATCHES
  return { insert: inserting / writes / 1000, remove: removing / writes / 1000 }
}
