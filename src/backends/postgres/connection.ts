import { SQL } from 'bun'
import { type BunSQLDatabase, drizzle } from 'drizzle-orm/bun-sql'
import { DatabaseOpenError } from '../../db/errors'
import * as schema from './schema'

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL }

export interface PostgresOptions {
  /**
   * Named prepared statements (the default). Switch off behind a transaction-mode pooler
   * (PgBouncer, Supavisor), which may run each statement on another server connection.
   */
  prepare: boolean
  /** Connections in the pool. */
  max: number
}

/** Seconds to wait for a connection before a query fails (and /health says so). */
const CONNECT_TIMEOUT_S = 5

/**
 * A pool of connections to PostgreSQL through Bun's SQL client, with drizzle's `bun-sql`
 * driver over it. Nothing is connected until the first query: `connectPostgres` checks.
 */
export function openPostgres(url: string, options: PostgresOptions): PgDb {
  const client = new SQL(url, {
    prepare: options.prepare,
    max: options.max,
    connectionTimeout: CONNECT_TIMEOUT_S,
    idleTimeout: 60,
  })
  return drizzle({ client, schema }) as PgDb
}

/** Connects once and asks the server's version; a one-line DatabaseOpenError when it cannot. */
export async function connectPostgres(db: PgDb, url: string): Promise<string> {
  try {
    const [row] = await db.$client`SHOW server_version`
    // "15.18 (Debian 15.18-0+deb12u1)": the number is what an operator needs.
    return String((row as { server_version: string }).server_version).split(' ')[0] as string
  } catch (error) {
    throw new DatabaseOpenError(
      `cannot connect to PostgreSQL at ${redactUrl(url)}: ${(error as Error).message}`,
    )
  }
}

/** The URL without its password, for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'postgres://(unparseable URL)'
  }
}
