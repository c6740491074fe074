import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { SQL } from 'bun'
import type { Config } from '../config'
import { IncompleteUploads } from '../storage/multipart-uploads'
import { S3Store } from '../storage/s3'
import { connectPostgres, openPostgres } from './postgres/connection'
import { runPgMigrations } from './postgres/migrate'
import { createPgPendingObjects } from './postgres/pending-objects'
import { runMigrations } from './sqlite/migrate'
import { bucketClient } from './storage'

/** Every table a roster keeps, parents before children (what `roster copy` moves, in order). */
export const COPIED_TABLES = [
  'settings',
  'users',
  'api_keys',
  'sessions',
  'access_tokens',
  'idempotency_keys',
  'uploads',
  'files',
  'webhook_events',
] as const

/** Tables only the shared database has; they must be empty in the target too. */
const SHARED_ONLY_TABLES = ['login_failures', 'pending_objects'] as const

/** The copy cannot start or did not verify: one line for the operator. */
export class CopyError extends Error {}

export interface CopyProgress {
  rows(total: number): { advance(rows: number): void; finish(): void }
  files(totalBytes: number): { advance(bytes: number): void; finish(): void }
}

export interface CopyReport {
  tables: Record<string, number>
  files: number
  bytes: number
  /** The target already held this copy (an earlier run got past its rows): only verified. */
  alreadyCopied: boolean
  /** Objects an interrupted earlier run left, deleted before copying again. */
  leftoversRemoved: number
}

interface FileRow {
  id: string
  size: number
  sha256: string
}

/**
 * Copies the SQLite roster in `dataDir` (one read snapshot) into an empty PostgreSQL database
 * and, with `storage`, its uploaded files into an empty bucket prefix; then checks every
 * table's row count and every file's SHA-256 in the target. The rows go in one transaction:
 * a copy that fails leaves the database empty, and the objects it wrote are deleted. Run again
 * after a copy that was killed, it finishes the job: it deletes what the killed run left (its
 * objects are listed as pending) and copies again, or, when the earlier run got past its rows,
 * only verifies.
 */
export async function copyRoster(
  source: { dataDir: string },
  target: {
    databaseUrl: string
    storage: Config['storage']
    env: Record<string, string | undefined>
  },
  progress: CopyProgress,
): Promise<CopyReport> {
  const dbPath = join(source.dataDir, 'roster.db')
  if (!existsSync(dbPath)) throw new CopyError(`no roster database at ${dbPath}`)
  const sqlite = new Database(dbPath, { strict: true })
  const db = openPostgres(target.databaseUrl, { prepare: true, max: 2 })
  const pool = db.$client
  try {
    sqlite.run('PRAGMA busy_timeout = 5000')
    runMigrations(sqlite)
    await connectPostgres(db, target.databaseUrl)
    await runPgMigrations(pool)
    const bucket = target.storage === null ? null : bucketClient(target.storage, target.env)
    const store =
      bucket === null
        ? null
        : new S3Store(
            bucket.client,
            bucket.location,
            createPgPendingObjects(pool),
            Date.now,
            new IncompleteUploads(bucket.access),
          )

    // One snapshot of the source for rows and file list alike, even with a server running.
    sqlite.run('BEGIN')
    try {
      const counts = Object.fromEntries(
        COPIED_TABLES.map((table) => [table, countRows(sqlite, table)]),
      ) as Record<string, number>
      const files = sqlite
        .query<FileRow, []>('SELECT id, size, sha256 FROM files ORDER BY rowid')
        .all()
      const report = {
        tables: counts,
        files: files.length,
        bytes: files.reduce((sum, file) => sum + file.size, 0),
      }
      const settings = sqlite
        .query<Setting, []>('SELECT key, value FROM settings ORDER BY key')
        .all()
      const state = await targetState(pool, counts, settings)
      if (state.kind === 'copied') {
        await verify(pool, counts, files, store)
        return { ...report, alreadyCopied: true, leftoversRemoved: 0 }
      }
      // An interrupted earlier run's objects: tracked as pending, deleted before anything else.
      if (state.leftovers.length > 0) await removeLeftovers(pool, store, state.leftovers)
      if (bucket !== null) await refuseNonEmptyPrefix(bucket.client, bucket.location.prefix)
      await copyAll(sqlite, pool, source.dataDir, { counts, files, store, progress })
      await verify(pool, counts, files, store)
      return { ...report, alreadyCopied: false, leftoversRemoved: state.leftovers.length }
    } finally {
      sqlite.run('COMMIT')
    }
  } finally {
    sqlite.close()
    await pool.close()
  }
}

/**
 * The files, then every row in one transaction that also drops the files' pending rows: once it
 * commits the copy is whole; until then the target's tables stay empty and every object written
 * is listed as pending (a failed run deletes them at once, a killed one leaves them listed for
 * the next run to delete).
 */
async function copyAll(
  sqlite: Database,
  pool: SQL,
  dataDir: string,
  what: {
    counts: Record<string, number>
    files: FileRow[]
    store: S3Store | null
    progress: CopyProgress
  },
): Promise<void> {
  const { counts, files, store, progress } = what
  const uploadDir = join(dataDir, 'uploads')
  const placed: string[] = []
  try {
    const fileProgress = progress.files(files.reduce((sum, file) => sum + file.size, 0))
    for (const file of files) {
      await copyFile(uploadDir, file, store, placed)
      fileProgress.advance(file.size)
    }
    fileProgress.finish()
    const rowProgress = progress.rows(Object.values(counts).reduce((a, b) => a + b, 0))
    await pool.begin(async (tx) => {
      for (const table of COPIED_TABLES) await copyTable(sqlite, tx, table, rowProgress)
      if (placed.length > 0) await tx`DELETE FROM pending_objects WHERE id = ANY(${placed}::text[])`
    })
    rowProgress.finish()
  } catch (error) {
    await store?.discard(placed)
    throw error
  }
}

type TargetState = { kind: 'copied' } | { kind: 'empty'; leftovers: string[] }

/**
 * What the target holds: nothing (perhaps the objects of an interrupted copy, listed as pending
 * and nothing else), this very copy (every table has the source's row count: an earlier run got
 * past its rows), or something else, which is refused.
 */
async function targetState(
  pool: SQL,
  counts: Record<string, number>,
  settings: readonly Setting[],
): Promise<TargetState> {
  const occupied: string[] = []
  for (const table of [...COPIED_TABLES, ...SHARED_ONLY_TABLES]) {
    const [row] = await pool.unsafe(`SELECT EXISTS (SELECT 1 FROM ${table}) AS taken`)
    if ((row as { taken: boolean }).taken) occupied.push(table)
  }
  const pending = await pool<{ id: string }[]>`SELECT id FROM pending_objects ORDER BY id`
  const rowsTaken = occupied.filter((table) => table !== 'pending_objects')
  if (rowsTaken.length === 0) return { kind: 'empty', leftovers: pending.map((row) => row.id) }
  if (pending.length === 0 && (await isThisCopy(pool, counts, settings))) return { kind: 'copied' }
  throw new CopyError(
    `the target database is not empty (table ${rowsTaken[0]} has rows) and is not this copy; roster copy only fills an empty database (to start over: drop and create the database, empty the bucket prefix, run roster copy again)`,
  )
}

interface Setting {
  key: string
  value: string
}

/**
 * Whether the target is a copy of this source: the same install-wide settings (among them a
 * random secret made when the source was created, so no other roster has them), and every
 * table's row count.
 */
async function isThisCopy(
  pool: SQL,
  counts: Record<string, number>,
  settings: readonly Setting[],
): Promise<boolean> {
  const theirs = await pool<Setting[]>`SELECT key, value FROM settings ORDER BY key`
  if (
    JSON.stringify(theirs.map(({ key, value }) => ({ key, value }))) !== JSON.stringify(settings)
  ) {
    return false
  }
  for (const [table, expected] of Object.entries(counts)) {
    const [row] = await pool.unsafe(`SELECT count(*)::int AS n FROM ${table}`)
    if ((row as { n: number }).n !== expected) return false
  }
  const [failures] = await pool.unsafe('SELECT count(*)::int AS n FROM login_failures')
  return (failures as { n: number }).n === 0
}

/** Deletes an interrupted run's objects (and multipart uploads) and their pending rows. */
async function removeLeftovers(pool: SQL, store: S3Store | null, ids: string[]): Promise<void> {
  if (store !== null) await store.discard(ids)
  else await pool`DELETE FROM pending_objects WHERE id = ANY(${ids}::text[])`
  const [left] = await pool<{ n: number }[]>`SELECT count(*)::int AS n FROM pending_objects`
  if ((left?.n ?? 0) > 0) {
    throw new CopyError(
      'could not delete what an interrupted copy left in the bucket; check the bucket and run roster copy again',
    )
  }
}

async function refuseNonEmptyPrefix(client: Bun.S3Client, prefix: string): Promise<void> {
  const listed = await client
    .list({ prefix: prefix === '' ? undefined : `${prefix}/`, maxKeys: 1 })
    .catch((error: Error) => {
      throw new CopyError(`the bucket is not usable: ${error.message.split('\n')[0]}`)
    })
  if ((listed.contents ?? []).length > 0) {
    throw new CopyError(
      `the target bucket already holds objects under ${prefix === '' ? 'its root' : `${prefix}/`}; roster copy only fills an empty one`,
    )
  }
}

const countRows = (sqlite: Database, table: string) =>
  (sqlite.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n

/**
 * One file, read from the upload folder and hashed on the way: into the bucket under the same
 * id, or (files staying on disk) only checked.
 */
async function copyFile(
  uploadDir: string,
  file: FileRow,
  store: S3Store | null,
  placed: string[],
): Promise<void> {
  const path = join(uploadDir, file.id)
  if (!existsSync(path))
    throw new CopyError(`uploaded file ${file.id} is missing from ${uploadDir}`)
  const source = Bun.file(path).stream()
  const limits = {
    maxFileSize: Number.MAX_SAFE_INTEGER,
    budget: { remaining: Number.MAX_SAFE_INTEGER },
  }
  let sha256: string
  if (store === null) {
    const hasher = new Bun.CryptoHasher('sha256')
    for await (const chunk of source) hasher.update(chunk)
    sha256 = hasher.digest('hex')
  } else {
    placed.push(file.id)
    sha256 = (await store.receiveAs(file.id, source, limits)).sha256
  }
  if (sha256 !== file.sha256) {
    throw new CopyError(`uploaded file ${file.id} does not match its recorded SHA-256`)
  }
}

/** Column names and PostgreSQL types of a target table. */
async function targetColumns(tx: SQL, table: string): Promise<Map<string, string>> {
  const rows = (await tx`
    SELECT column_name, data_type FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table}`) as {
    column_name: string
    data_type: string
  }[]
  return new Map(rows.map((row) => [row.column_name, row.data_type]))
}

async function copyTable(
  sqlite: Database,
  tx: SQL,
  table: string,
  progress: { advance(rows: number): void },
): Promise<void> {
  const types = await targetColumns(tx, table)
  const columns = (sqlite.query(`PRAGMA table_info(${table})`).all() as { name: string }[]).map(
    (column) => column.name,
  )
  const missing = columns.filter((column) => !types.has(column))
  if (missing.length > 0) {
    throw new CopyError(`table ${table}: the target has no column ${missing.join(', ')}`)
  }
  const quoted = columns.map((column) => `"${column}"`).join(', ')
  // PostgreSQL takes at most 65,535 parameters in one statement.
  const perBatch = Math.max(1, Math.floor(30_000 / columns.length))
  let batch: unknown[][] = []
  const flush = async () => {
    if (batch.length === 0) return
    const params: unknown[] = []
    const tuples = batch.map((row) => {
      const slots = row.map((value) => {
        params.push(value)
        return `$${params.length}`
      })
      return `(${slots.join(', ')})`
    })
    await tx.unsafe(`INSERT INTO ${table} (${quoted}) VALUES ${tuples.join(', ')}`, params)
    progress.advance(batch.length)
    batch = []
  }
  const rows = sqlite.query(`SELECT ${quoted} FROM ${table} ORDER BY rowid`).values()
  for (const row of rows) {
    batch.push(row.map((value, i) => toPostgres(value, types.get(columns[i] as string))))
    if (batch.length >= perBatch) await flush()
  }
  await flush()
  await resetIdentity(tx, table)
}

/** SQLite's values as PostgreSQL takes them: 0/1 as booleans, the rest as they are. */
function toPostgres(value: unknown, type: string | undefined): unknown {
  if (value === null) return null
  if (type === 'boolean') return value === 1 || value === true
  if (type === 'bigint' || type === 'integer')
    return typeof value === 'bigint' ? value : Number(value)
  return value
}

/** Identity columns continue after the copied ids. */
async function resetIdentity(tx: SQL, table: string): Promise<void> {
  const identities = (await tx`
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} AND is_identity = 'YES'`) as {
    column_name: string
  }[]
  for (const { column_name: column } of identities) {
    await tx.unsafe(
      `SELECT setval(pg_get_serial_sequence('${table}', '${column}'), coalesce(max("${column}"), 1), max("${column}") IS NOT NULL) FROM ${table}`,
    )
  }
}

/** Row counts and (in a bucket) every object's SHA-256, read back from the target. */
async function verify(
  pool: SQL,
  counts: Record<string, number>,
  files: FileRow[],
  store: S3Store | null,
): Promise<void> {
  for (const [table, expected] of Object.entries(counts)) {
    const [row] = await pool.unsafe(`SELECT count(*)::int AS n FROM ${table}`)
    const actual = (row as { n: number }).n
    if (actual !== expected) {
      throw new CopyError(
        `verification failed: ${table} has ${actual} rows, the source ${expected}`,
      )
    }
  }
  if (store === null) return
  for (const file of files) {
    const hasher = new Bun.CryptoHasher('sha256')
    const stream = await store.read(file.id, null)
    for await (const chunk of stream) hasher.update(chunk)
    if (hasher.digest('hex') !== file.sha256) {
      throw new CopyError(`verification failed: object ${file.id} does not match its SHA-256`)
    }
  }
}
