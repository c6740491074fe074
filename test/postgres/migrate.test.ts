import { describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { connectPostgres, openPostgres, redactUrl } from '../../src/backends/postgres/connection'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { embeddedMigrations } from '../../src/backends/postgres/migrations.gen'
import { createPgUserRows } from '../../src/backends/postgres/users'
import { DatabaseOpenError } from '../../src/db/errors'
import { freshDatabase } from '../helpers/postgres'

describe('PostgreSQL migrations', () => {
  test('create every table once; a second run applies nothing', async () => {
    await using database = await freshDatabase()
    const sql = new SQL(database.url)
    try {
      expect((await runPgMigrations(sql)).applied).toEqual(embeddedMigrations.map((m) => m.tag))
      expect((await runPgMigrations(sql)).applied).toEqual([])
      const tables: { table_name: string }[] =
        await sql`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
      expect(tables.map((row) => row.table_name)).toEqual([
        '__drizzle_migrations',
        'access_tokens',
        'account_tokens',
        'api_keys',
        'audit_events',
        'auth_challenges',
        'files',
        'group_members',
        'group_profiles',
        'groups',
        'idempotency_keys',
        'login_failures',
        'mail_outbox',
        'passkeys',
        'pending_objects',
        'recovery_codes',
        'sessions',
        'settings',
        'totp_factors',
        'uploads',
        'user_count',
        'user_count_deltas',
        'user_profiles',
        'users',
        'webhook_deliveries',
        'webhook_dispatch',
        'webhook_endpoints',
        'webhook_events',
      ])
    } finally {
      await sql.close()
    }
  })

  test('instances that start together migrate once (the advisory lock)', async () => {
    await using database = await freshDatabase()
    const pools = Array.from({ length: 4 }, () => new SQL(database.url, { max: 2 }))
    try {
      const results = await Promise.all(pools.map((pool) => runPgMigrations(pool)))
      const applying = results.filter((result) => result.applied.length > 0)
      expect(applying).toHaveLength(1)
      const [row] = await (pools[0] as SQL)`SELECT count(*)::int AS n FROM "__drizzle_migrations"`
      expect(row.n).toBe(embeddedMigrations.length)
    } finally {
      await Promise.all(pools.map((pool) => pool.close()))
    }
  })

  test('a database written by a newer roster is refused, and nothing changes', async () => {
    await using database = await freshDatabase()
    const sql = new SQL(database.url)
    try {
      await runPgMigrations(sql)
      await sql`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES ('future', ${Date.now() + 1e12})`
      const newer = runPgMigrations(sql)
      await expect(newer).rejects.toThrow(DatabaseOpenError)
      await newer.catch(() => {})
      const [row] = await sql`SELECT count(*)::int AS n FROM "__drizzle_migrations"`
      expect(row.n).toBe(embeddedMigrations.length + 1)
    } finally {
      await sql.close()
    }
  })

  test('users written before 0001 keep their instants, read back as the same ISO text', async () => {
    await using database = await freshDatabase()
    const sql = new SQL(database.url, { max: 1 })
    try {
      const [init] = embeddedMigrations
      await runPgMigrations(sql, [init as (typeof embeddedMigrations)[number]])
      await sql`INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES
        ('Ada', 'ada@example.com', 'ada@example.com', '2026-01-02T03:04:05.678Z', '2026-11-24T00:00:00.001Z')`
      expect((await runPgMigrations(sql)).applied).toEqual(
        embeddedMigrations.slice(1).map((migration) => migration.tag),
      )
      const [column] = await sql`
        SELECT data_type, datetime_precision FROM information_schema.columns
        WHERE table_name = 'users' AND column_name = 'created_at'`
      expect(column).toEqual({ data_type: 'timestamp with time zone', datetime_precision: 3 })
      const user = await createPgUserRows(sql, () => new Date()).get(1)
      expect(user).toMatchObject({
        created_at: '2026-01-02T03:04:05.678Z',
        updated_at: '2026-11-24T00:00:00.001Z',
      })
    } finally {
      await sql.close()
    }
  })

  test('users written before 0016 get their search keys in its transaction, and are counted (issue 34)', async () => {
    await using database = await freshDatabase()
    const sql = new SQL(database.url, { max: 1 })
    try {
      const before = embeddedMigrations.findIndex((m) => m.tag === '0016_search_key')
      await runPgMigrations(sql, embeddedMigrations.slice(0, before))
      // More than one batch of the fill (10,000).
      await sql`INSERT INTO users (name, email, email_key, created_at, updated_at)
        SELECT 'Zoë ' || i, 'Z' || i || '@Example.COM', 'z' || i || '@example.com', now(), now()
        FROM generate_series(1, 25000) AS i`
      expect((await runPgMigrations(sql)).applied).toEqual(
        embeddedMigrations.slice(before).map((migration) => migration.tag),
      )
      const keys = await sql<{ search_key: string }[]>`
        SELECT search_key FROM users WHERE id IN (1, 25000) ORDER BY id`
      expect(keys.map((row) => row.search_key)).toEqual([
        'zoe 1\nz1@example.com',
        'zoe 25000\nz25000@example.com',
      ])
      const rows = createPgUserRows(sql, () => new Date())
      expect(await rows.count()).toBe(25_000)
      const found = await rows.search({
        sort: 'id',
        limit: 5,
        offset: 0,
        filters: { q: 'ZOE 2499' },
        counted: true,
      })
      expect([...(await sql`SELECT id FROM users WHERE search_key = ''`)]).toEqual([])
      expect(found.total).toBe(11)
    } finally {
      await sql.close()
    }
  })

  test('an unreachable server is one line, without the password', async () => {
    const url = 'postgres://roster:s3cret@127.0.0.1:9/roster'
    const db = openPostgres(url, { prepare: true, max: 1 })
    try {
      const failure = await connectPostgres(db, url).catch((error: Error) => error)
      expect(failure).toBeInstanceOf(DatabaseOpenError)
      const message = (failure as Error).message
      expect(message).toStartWith(
        'cannot connect to PostgreSQL at postgres://roster:***@127.0.0.1:9/roster',
      )
      expect(message).not.toContain('s3cret')
      expect(message).not.toContain('\n')
    } finally {
      await db.$client.close()
    }
    expect(redactUrl('postgres://a:b@h/d')).toBe('postgres://a:***@h/d')
  })
})
