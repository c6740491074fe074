import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  type Dialect,
  MIGRATION_SETS,
  renderMigrationsModule,
} from '../../scripts/embed-migrations'
import { SYSTEM } from '../../src/audit/events'
import { openDatabase } from '../../src/backends/sqlite/connection'
import { runMigrations } from '../../src/backends/sqlite/migrate'
import { embeddedMigrations } from '../../src/backends/sqlite/migrations.gen'
import { testConfig } from '../../src/config'
import { DatabaseOpenError } from '../../src/db/errors'
import type { Migration } from '../../src/db/migrations'
import { makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { tempDir } from '../helpers/app'

describe('runMigrations', () => {
  test('applies every embedded migration once, and nothing the second time', () => {
    using dir = tempDir()
    const db = openDatabase(join(dir.path, 'roster.db'), { sync: 'full' })
    expect(runMigrations(db.$client).applied).toEqual(embeddedMigrations.map((m) => m.tag))
    expect(runMigrations(db.$client).applied).toEqual([])
    const tables = db.$client
      .query<{ name: string }, []>(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
      )
      .all()
      .map((row) => row.name)
    expect(tables).toContain('users')
    expect(
      db.$client.query<{ foreign_keys: number }, []>('PRAGMA foreign_keys').get()?.foreign_keys,
    ).toBe(1)
    db.$client.close()
  })

  test('opens with WAL, synchronous FULL by default and NORMAL on request, and a busy timeout', () => {
    using dir = tempDir()
    const full = openDatabase(join(dir.path, 'a.db'), { sync: 'full' })
    const pragma = (db: Database, name: string) =>
      Object.values(db.query(`PRAGMA ${name}`).get() as object)[0]
    expect(pragma(full.$client, 'journal_mode')).toBe('wal')
    expect(pragma(full.$client, 'synchronous')).toBe(2)
    expect(pragma(full.$client, 'busy_timeout')).toBe(5000)
    const normal = openDatabase(join(dir.path, 'b.db'), { sync: 'normal' })
    expect(pragma(normal.$client, 'synchronous')).toBe(1)
    full.$client.close()
    normal.$client.close()
  })

  test('a new database, its WAL and a new data dir are readable by the owner only', async () => {
    using dir = tempDir()
    const { makeDeps } = await import('../../src/deps')
    const { testConfig } = await import('../../src/config')
    const { memoryLogger } = await import('../../src/log')
    const dataDir = join(dir.path, 'fresh')
    const deps = await makeDeps(testConfig({ dataDir }), memoryLogger())
    await deps.users.create({ name: 'A', email: 'a@example.com', passwordHash: null }, SYSTEM)
    const mode = (path: string) => statSync(path).mode & 0o777
    expect(mode(dataDir)).toBe(0o700)
    expect(mode(join(dataDir, 'roster.db'))).toBe(0o600)
    expect(mode(join(dataDir, 'roster.db-wal'))).toBe(0o600)
    deps.close()
  })

  test('refuses a database that has a migration this binary does not know', () => {
    using dir = tempDir()
    const db = openDatabase(join(dir.path, 'roster.db'), { sync: 'full' })
    runMigrations(db.$client)
    db.$client.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [
      'future',
      Date.now() + 10 ** 9,
    ])
    expect(() => runMigrations(db.$client)).toThrow(DatabaseOpenError)
    expect(() => runMigrations(db.$client)).toThrow(/newer roster/)
    db.$client.close()
  })

  test('keeps child rows through a table rebuild (foreign keys are off while migrating)', () => {
    const sqlite = new Database(':memory:', { strict: true })
    sqlite.run('PRAGMA foreign_keys = ON')
    const migrations: Migration[] = [
      {
        tag: '0000_a',
        when: 1,
        sql: "CREATE TABLE parent (id integer primary key, name text);--> statement-breakpoint\nCREATE TABLE child (id integer primary key, parent_id integer REFERENCES parent(id) ON DELETE CASCADE);--> statement-breakpoint\nINSERT INTO parent VALUES (1, 'p');--> statement-breakpoint\nINSERT INTO child VALUES (1, 1);",
      },
    ]
    runMigrations(sqlite, migrations)
    const rebuild: Migration = {
      tag: '0001_rebuild',
      when: 2,
      sql: "CREATE TABLE __new_parent (id integer primary key, name text not null default '');--> statement-breakpoint\nINSERT INTO __new_parent SELECT id, name FROM parent;--> statement-breakpoint\nDROP TABLE parent;--> statement-breakpoint\nALTER TABLE __new_parent RENAME TO parent;",
    }
    runMigrations(sqlite, [...migrations, rebuild])
    expect(sqlite.query('SELECT count(*) AS n FROM child').get()).toEqual({ n: 1 })
    expect(
      sqlite.query<{ foreign_keys: number }, []>('PRAGMA foreign_keys').get()?.foreign_keys,
    ).toBe(1)
  })

  test('rolls back a migration that leaves foreign key violations', () => {
    const sqlite = new Database(':memory:', { strict: true })
    const broken: Migration = {
      tag: '0000_broken',
      when: 1,
      sql: 'CREATE TABLE parent (id integer primary key);--> statement-breakpoint\nCREATE TABLE child (id integer primary key, parent_id integer REFERENCES parent(id));--> statement-breakpoint\nINSERT INTO child VALUES (1, 42);',
    }
    expect(() => runMigrations(sqlite, [broken])).toThrow(/foreign key/)
    expect(sqlite.query("SELECT name FROM sqlite_master WHERE name = 'child'").all()).toEqual([])
  })

  test('the embedded migrations modules are current with drizzle/ and drizzle-pg/', () => {
    for (const [dialect, set] of Object.entries(MIGRATION_SETS)) {
      const generated = readFileSync(join(import.meta.dir, '../..', set.module), 'utf8')
      expect(generated).toBe(renderMigrationsModule(dialect as Dialect))
    }
  })
})

/** A database with every migration before `tag` applied, and the index of `tag`. */
function migratedUpTo(dir: string, tag: string) {
  const db = openDatabase(join(dir, 'roster.db'), { sync: 'full' })
  const before = embeddedMigrations.findIndex((m) => m.tag === tag)
  runMigrations(db.$client, embeddedMigrations.slice(0, before))
  return { db, before }
}

describe('migration 0016-0017 on a database that already has users (issue 34)', () => {
  test('fills every search key in its transaction, counts the users, and the index catches up', async () => {
    using dir = tempDir()
    const { db, before } = migratedUpTo(dir.path, '0016_search_key')
    const insert = db.$client.query(
      "INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES (?1, ?2, lower(?2), 'x', 'x')",
    )
    const users = 25_000
    db.$client.transaction(() => {
      for (let i = 1; i <= users; i++) insert.run(`Zoë ${i}`, `Z${i}@Example.COM`)
    })()
    expect(runMigrations(db.$client).applied).toEqual(
      embeddedMigrations.slice(before).map((m) => m.tag),
    )
    const keys = db.$client
      .query<{ search_key: string }, []>('SELECT search_key FROM users WHERE id IN (1, 25000)')
      .all()
      .map((row) => row.search_key)
    expect(keys).toEqual(['zoe 1\nz1@example.com', 'zoe 25000\nz25000@example.com'])
    db.$client.close()
    // The users' total and q through the store, before and after the index caught up.
    const deps = await makeDeps(testConfig({ dataDir: dir.path }), memoryLogger())
    try {
      const search = () =>
        deps.users.search({
          sort: 'id',
          limit: 5,
          offset: 0,
          filters: { q: 'ZOE 2499' },
          counted: true,
        })
      expect(await deps.users.count()).toBe(users)
      expect((await search()).total).toBe(11)
      await deps.catchUp()
      expect((await search()).total).toBe(11)
      expect((await deps.users.list({ limit: 1, offset: 0 })).total).toBe(users)
    } finally {
      await deps.close()
    }
  })
})

describe('migration 0018 on a database whose search index is part way', () => {
  test('the name order holds what the index holds: indexed users, stale ones under their old key', async () => {
    using dir = tempDir()
    const { db } = migratedUpTo(dir.path, '0018_user_name_order')
    const insert = db.$client.query(
      "INSERT INTO users (name, email, email_key, created_at, updated_at, search_key) VALUES (?1, ?2, ?2, 'x', 'x', lower(?1) || char(10) || ?2)",
    )
    for (const name of ['Cy', 'Ann', 'Bo', 'Dee'])
      insert.run(name, `${name.toLowerCase()}@example.com`)
    // The indexer had reached user 3, then Ann was renamed and Bo deleted: their entries are
    // stale, as the triggers record.
    db.$client.run(
      'INSERT INTO users_search (rowid, search_key) SELECT id, search_key FROM users WHERE id <= 3',
    )
    db.$client.run('UPDATE users_indexed SET through = 3, users = 3 WHERE id = 1')
    db.$client.run(
      "UPDATE users SET name = 'Zoe', search_key = 'zoe' || char(10) || email WHERE id = 2",
    )
    db.$client.run('DELETE FROM users WHERE id = 3')
    runMigrations(db.$client)
    const kept = db.$client
      .query<{ key: string; id: number }, []>(
        'SELECT name_key AS key, user_id AS id FROM users_name_order ORDER BY name_key, user_id',
      )
      .all()
    expect(kept).toEqual([
      { key: 'ann\nann@example.com', id: 2 },
      { key: 'bo\nbo@example.com', id: 3 },
      { key: 'cy\ncy@example.com', id: 1 },
    ])
    db.$client.close()
    // Through the store: Zoe last, Dee (above the mark) in place, Bo gone; then caught up.
    const deps = await makeDeps(testConfig({ dataDir: dir.path }), memoryLogger())
    try {
      const names = async () =>
        (
          await deps.users.search({
            sort: 'name',
            limit: 10,
            offset: 0,
            filters: {},
            counted: false,
          })
        ).data.map((user) => user.name)
      expect(await names()).toEqual(['Cy', 'Dee', 'Zoe'])
      await deps.catchUp()
      expect(await names()).toEqual(['Cy', 'Dee', 'Zoe'])
    } finally {
      await deps.close()
    }
  })
})

describe('openDatabase', () => {
  test('a file that is not SQLite gives a clear DatabaseOpenError', () => {
    using dir = tempDir()
    const path = join(dir.path, 'roster.db')
    Bun.write(path, 'this is not a database, just text '.repeat(200))
    expect(() => {
      const db = openDatabase(path, { sync: 'full' })
      runMigrations(db.$client)
    }).toThrow(DatabaseOpenError)
  })
})
