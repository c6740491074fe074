import type { Config } from '../config'
import type { Logger } from '../log'
import type { Backend } from './backend'
import { openPostgresBackend } from './postgres/index'
import { openSqliteBackend } from './sqlite/index'

export type { Backend, UnitRows } from './backend'

export interface BackendOptions {
  now: () => Date
  /** Epoch milliseconds, the same clock as `now`. */
  clock: () => number
  log: Logger
  /** Called after each commit with the writes it made durable (SQLite's group commit). */
  onCommit: (writes: number) => void
}

/**
 * The database the config names, opened and migrated: SQLite in the data directory without a
 * --database-url, else the database its URL's scheme names. The one place a backend is chosen.
 */
export function openBackend(config: Config, options: BackendOptions): Promise<Backend> {
  const { databaseUrl } = config
  if (databaseUrl === null) return Promise.resolve(openSqliteBackend(config, options))
  return openPostgresBackend({ ...config, databaseUrl }, options)
}
