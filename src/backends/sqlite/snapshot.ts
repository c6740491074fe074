import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { CopyError } from '../../db/errors'
import { runMigrations } from './migrate'

/** A setting as both databases keep it. */
export interface Setting {
  key: string
  value: string
}

/** An uploaded file's row as the copy checks it. */
export interface CopiedFile {
  id: string
  size: number
  sha256: string
}

/** One read snapshot of a SQLite roster: everything `roster copy` takes from it. */
export interface RosterSnapshot {
  count(table: string): number
  settings(): Setting[]
  files(): CopiedFile[]
  /** A table's column names and its rows' values, in insertion order. */
  rows(table: string): { columns: string[]; values: Iterable<unknown[]> }
  /** Ends the snapshot and closes the file. */
  close(): void
}

/**
 * Opens the roster at `path` (migrated to this binary's schema) and starts one read
 * transaction: rows and files alike come from one moment, even with a server running.
 */
export function openSnapshot(path: string): RosterSnapshot {
  if (!existsSync(path)) throw new CopyError(`no roster database at ${path}`)
  const sqlite = new Database(path, { strict: true })
  try {
    sqlite.run('PRAGMA busy_timeout = 5000')
    runMigrations(sqlite)
    sqlite.run('BEGIN')
  } catch (error) {
    sqlite.close()
    throw error
  }
  return {
    count: (table) => (sqlite.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
    settings: () => sqlite.query<Setting, []>('SELECT key, value FROM settings ORDER BY key').all(),
    files: () =>
      sqlite.query<CopiedFile, []>('SELECT id, size, sha256 FROM files ORDER BY rowid').all(),
    rows(table) {
      const columns = (sqlite.query(`PRAGMA table_info(${table})`).all() as { name: string }[]).map(
        (column) => column.name,
      )
      const quoted = columns.map((column) => `"${column}"`).join(', ')
      const values = sqlite.query(`SELECT ${quoted} FROM ${table} ORDER BY rowid`).values()
      return { columns, values }
    },
    close() {
      sqlite.run('COMMIT')
      sqlite.close()
    },
  }
}
