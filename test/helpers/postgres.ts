import { SQL } from 'bun'
import { MISSING_POSTGRES, type PostgresServer, startPostgres } from '../../scripts/postgres-server'

let server: Promise<{ url: string; own: PostgresServer | null }> | null = null

/**
 * The PostgreSQL server of this test run: ROSTER_TEST_DATABASE_URL when set (npm run
 * test:postgres sets it to the server it started), else one started here for the run and
 * stopped when the process exits. Without PostgreSQL installed this throws one line saying
 * what to install: a test that needs it fails, never skips.
 */
export function testPostgres(): Promise<{ url: string; own: PostgresServer | null }> {
  server ??= (async () => {
    const given = process.env.ROSTER_TEST_DATABASE_URL
    if (given !== undefined && given !== '') return { url: given, own: null }
    const own = await startPostgres({ reapWith: process.pid }).catch((error: Error) => {
      throw new Error(error.message.startsWith('PostgreSQL') ? error.message : MISSING_POSTGRES)
    })
    return { url: own.url, own }
  })()
  return server
}

/** One statement on a connection of its own, closed after (tests reading what instances wrote). */
export async function queryOnce<T>(url: string, text: string): Promise<T[]> {
  const sql = new SQL(url, { max: 1 })
  try {
    return (await sql.unsafe(text)) as T[]
  } finally {
    await sql.close()
  }
}

let databases = 0

/**
 * A new, empty database on the test server, dropped on dispose: each test gets its own, as
 * each SQLite test gets its own file.
 */
export async function freshDatabase(): Promise<{ url: string } & AsyncDisposable> {
  const { url } = await testPostgres()
  const name = `roster_test_${process.pid}_${++databases}`
  await queryOnce(url, `CREATE DATABASE ${name}`)
  const target = new URL(url)
  target.pathname = `/${name}`
  return {
    url: target.toString(),
    async [Symbol.asyncDispose]() {
      await queryOnce(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}

/** Drops a test database at once, connections and all (what an operator's mistake would do). */
export async function dropDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1)
  const { url: serverUrl } = await testPostgres()
  await queryOnce(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
