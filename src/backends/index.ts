import type { Config } from '../config'
import type { Logger } from '../log'
import type { Backend } from './backend'
import { openSqliteBackend } from './sqlite/index'

export type { Backend, UnitRows } from './backend'

export interface BackendOptions {
  now: () => Date
  /** Epoch milliseconds, the same clock as `now`. */
  clock: () => number
  log: Logger
  /** Called after each commit with the writes it made durable (SQLite's group commit). */
  onCommit: (writes: number) => void
  /** True for the server: the backend's idle work runs (SQLite's search indexing). */
  serving?: boolean
  /**
   * SQLite: the reads of one turn of the event loop share one read transaction (turn-reads.ts).
   * For a process whose every write goes through the group commit: the server, the tests' app.
   */
  turnReads?: boolean
}

/**
 * The database the config names, opened and migrated: SQLite in the data directory without a
 * --database-url, else the database its URL's scheme names. The one place a backend is chosen.
 */
export async function openBackend(config: Config, options: BackendOptions): Promise<Backend> {
  const { databaseUrl } = config
  if (databaseUrl === null) return openSqliteBackend(config, options)
  // Loaded only when chosen: the embedded default starts without PostgreSQL's code.
  const { openPostgresBackend } = await import('./postgres/index')
  return openPostgresBackend({ ...config, databaseUrl }, options)
}
