import { Database } from 'bun:sqlite'
import { chmodSync, existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { type BunSQLiteDatabase, drizzle } from 'drizzle-orm/bun-sqlite'
import { DatabaseOpenError } from '../../db/errors'
import * as schema from './schema'
import type { WriteQueue } from './write-queue'

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }

/**
 * What the services work over. Writes go through `writes` (group commit) on the writer
 * connection (`db`, and `db.$client` raw); reads on the request path use `reader`, which sees
 * committed data only.
 */
export interface Store {
  readonly db: Db
  readonly reader: Database
  readonly writes: WriteQueue
  /**
   * Says a write was committed outside the group commit (the CLI's import, in its own
   * transaction): reads from now on see it, also in this turn (see turn-reads.ts).
   */
  committedAlone(): void
  /** `read` as one snapshot: every read in it sees the same state (turn-reads.ts's `snapshots`). */
  snapshot<A extends unknown[], R>(read: (...args: A) => R): (...args: A) => R
}

/** Where the embedded database lives in a data folder; the server, the CLI, backup and copy agree on it. */
export function sqliteFilePath(dataDir: string): string {
  return join(dataDir, 'roster.db')
}

export interface OpenOptions {
  /** `full` fsyncs the WAL on every commit (survives power loss); `normal` does not. */
  sync: 'full' | 'normal'
}

/**
 * Opens (creating if needed) the SQLite file with roster's pragmas. WAL lets readers run
 * beside the writer; busy_timeout makes a second process (backup, CLI) wait instead of failing.
 */
export function openDatabase(path: string, options: OpenOptions): Db {
  let sqlite: Database
  const isNew = !existsSync(path)
  try {
    sqlite = new Database(path, { create: true, strict: true })
    // Password and key hashes live here: owner-only. SQLite gives -wal and -shm the same mode.
    if (isNew) chmodSync(path, 0o600)
    sqlite.run('PRAGMA busy_timeout = 5000')
    sqlite.run('PRAGMA journal_mode = WAL')
  } catch (error) {
    throw new DatabaseOpenError(describeOpenFailure(path, error))
  }
  sqlite.run(`PRAGMA synchronous = ${options.sync === 'full' ? 'FULL' : 'NORMAL'}`)
  sqlite.run('PRAGMA foreign_keys = ON')
  return drizzle({ client: sqlite, schema }) as Db
}

/**
 * A second connection to the same file for reads that must see committed data only: while a
 * group transaction is open on the writer, its rows are not durable yet and may still fail to
 * commit. query_only makes a write through this connection an error, not a surprise.
 */
export function openReader(path: string): Database {
  const reader = new Database(path, { strict: true })
  reader.run('PRAGMA busy_timeout = 5000')
  reader.run('PRAGMA query_only = 1')
  return reader
}

function describeOpenFailure(path: string, error: unknown): string {
  const code = (error as { code?: string }).code
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return `${path} is not a usable SQLite database (${code}); restore it from a backup`
  }
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'SQLITE_PERM') {
    return `cannot open ${path} for writing (${code}); check the data directory's permissions`
  }
  return `cannot open ${path}: ${(error as Error).message}`
}

/**
 * The database file was deleted or replaced while roster had it open: every write from then on
 * would go into a file nobody will open again. (`code` is what the error handler maps to 503.)
 */
export class DatabaseLostError extends Error {
  readonly code = 'DATABASE_LOST'

  constructor(path: string) {
    super(
      `${path} was removed or replaced while roster had it open; writes are refused until a restart`,
    )
  }
}

/**
 * Tells whether the file at `path` is still the one that was opened, by device and inode (one
 * stat, a microsecond or two). Once it is not, it never is again: a copy put back at the path
 * is another file, and the open connection still writes to the old one. `onLost` runs once.
 */
export function fileIdentityGuard(path: string, onLost: (error: DatabaseLostError) => void) {
  const opened = statSync(path)
  let lost: DatabaseLostError | null = null
  return {
    /** Throws DatabaseLostError when the file at the path is gone or is another file. */
    check(): void {
      if (lost !== null) throw lost
      let current: { dev: number; ino: number } | undefined
      try {
        current = statSync(path)
      } catch {
        current = undefined
      }
      if (current?.dev === opened.dev && current.ino === opened.ino) return
      lost = new DatabaseLostError(path)
      onLost(lost)
      throw lost
    },
  }
}

export type FileIdentityGuard = ReturnType<typeof fileIdentityGuard>
