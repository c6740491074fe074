import { join } from 'node:path'
import type { Config } from '../config'
import { CopyError } from '../db/errors'
import { bucketDeadlines } from '../storage/deadlines'
import type { FileStore } from '../storage/file-store'
import { IncompleteUploads } from '../storage/multipart-uploads'
import { S3Store } from '../storage/s3'
import { createUploadFiles, type UploadFiles } from '../uploads/files'
import { type CopyTarget, openCopyTarget } from './postgres/copy-target'
import { sqliteFilePath } from './sqlite/connection'
import { type CopiedFile, openSnapshot, type RosterSnapshot, type Setting } from './sqlite/snapshot'
import { bucketClient } from './storage'

export { CopyError }

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
  'groups',
  'group_members',
  // What identity providers said of users through SCIM (externalId, names, other emails).
  'user_profiles',
  // What they said of groups (externalId).
  'group_profiles',
  // Mail not sent yet and links not used yet keep working after a move to PostgreSQL.
  'mail_outbox',
  'account_tokens',
  // Passkeys, TOTP secrets and recovery codes move with their users (challenges are minutes old
  // and are not worth keeping; they are copied anyway so that nothing is silently dropped).
  'passkeys',
  'totp_factors',
  'recovery_codes',
  'auth_challenges',
  // Who changed what stays readable after the move.
  'audit_events',
  // Outbound webhooks keep their endpoints, queue and place in the feed (translated: see
  // postgres/copy-target.ts), so nothing queued is lost and nothing is sent twice.
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_dispatch',
] as const

/** Tables only the shared database has; they must be empty in the target too. */
const SHARED_ONLY_TABLES = ['login_failures', 'pending_objects'] as const

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

/** Where the copy's files go: a bucket through the uploads' own file life, and its driver. */
interface Bucket {
  store: FileStore
  files: UploadFiles
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
    /** --storage-timeout (the default when not given). */
    storageTimeout?: number
    env: Record<string, string | undefined>
  },
  progress: CopyProgress,
): Promise<CopyReport> {
  const snapshot = openSnapshot(sqliteFilePath(source.dataDir))
  try {
    const database = await openCopyTarget(target.databaseUrl)
    try {
      const bucket = target.storage === null ? null : openBucket(target, database)
      return await copyInto(snapshot, database, bucket, source.dataDir, progress)
    } finally {
      await database.close()
    }
  } finally {
    snapshot.close()
  }
}

function openBucket(
  target: {
    storage: Config['storage']
    storageTimeout?: number
    env: Record<string, string | undefined>
  },
  database: CopyTarget,
): Bucket {
  const { client, location, access } = bucketClient(
    target.storage as NonNullable<Config['storage']>,
    target.env,
  )
  const deadlines = bucketDeadlines(target.storageTimeout)
  const store = new S3Store(
    client,
    location,
    new IncompleteUploads(access, { deadlines }),
    deadlines,
  )
  const files = createUploadFiles({
    store,
    pending: database.pendingFiles,
    // The copy never sweeps: what it leaves is found as pending by its next run.
    registered: async () => new Set(),
    clock: Date.now,
  })
  return { store, files }
}

async function copyInto(
  snapshot: RosterSnapshot,
  database: CopyTarget,
  bucket: Bucket | null,
  dataDir: string,
  progress: CopyProgress,
): Promise<CopyReport> {
  const counts = Object.fromEntries(
    COPIED_TABLES.map((table) => [table, snapshot.count(table)]),
  ) as Record<string, number>
  const files = snapshot.files()
  const report = {
    tables: counts,
    files: files.length,
    bytes: files.reduce((sum, file) => sum + file.size, 0),
  }
  const state = await targetState(database, counts, snapshot.settings())
  if (state.kind === 'copied') {
    await verify(database, counts, files, bucket)
    return { ...report, alreadyCopied: true, leftoversRemoved: 0 }
  }
  // An interrupted earlier run's objects: tracked as pending, deleted before anything else.
  if (state.leftovers.length > 0) await removeLeftovers(database, bucket, state.leftovers)
  if (bucket !== null) await refuseNonEmptyBucket(bucket.store)
  await copyAll(snapshot, database, bucket, join(dataDir, 'uploads'), { counts, files, progress })
  await verify(database, counts, files, bucket)
  return { ...report, alreadyCopied: false, leftoversRemoved: state.leftovers.length }
}

/**
 * The files, then every row in one transaction that also drops the files' pending rows: once it
 * commits the copy is whole; until then the target's tables stay empty and every object written
 * is listed as pending (a failed run deletes them at once, a killed one leaves them listed for
 * the next run to delete).
 */
async function copyAll(
  snapshot: RosterSnapshot,
  database: CopyTarget,
  bucket: Bucket | null,
  uploadDir: string,
  what: { counts: Record<string, number>; files: CopiedFile[]; progress: CopyProgress },
): Promise<void> {
  const { counts, files, progress } = what
  const placed: string[] = []
  try {
    const fileProgress = progress.files(files.reduce((sum, file) => sum + file.size, 0))
    for (const file of files) {
      await copyFile(uploadDir, file, bucket, placed)
      fileProgress.advance(file.size)
    }
    fileProgress.finish()
    const rowProgress = progress.rows(Object.values(counts).reduce((a, b) => a + b, 0))
    await database.fill(COPIED_TABLES, snapshot.rows, placed, rowProgress.advance)
    rowProgress.finish()
  } catch (error) {
    await bucket?.files.discard(placed)
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
  database: CopyTarget,
  counts: Record<string, number>,
  settings: readonly Setting[],
): Promise<TargetState> {
  const occupied = await database.occupied([...COPIED_TABLES, ...SHARED_ONLY_TABLES])
  const pending = await database.pendingIds()
  const rowsTaken = occupied.filter((table) => table !== 'pending_objects')
  if (rowsTaken.length === 0) return { kind: 'empty', leftovers: pending }
  if (pending.length === 0 && (await isThisCopy(database, counts, settings))) {
    return { kind: 'copied' }
  }
  throw new CopyError(
    `the target database is not empty (table ${rowsTaken[0]} has rows) and is not this copy; roster copy only fills an empty database (to start over: drop and create the database, empty the bucket prefix, run roster copy again)`,
  )
}

/**
 * Whether the target is a copy of this source: the same install-wide settings (among them a
 * random secret made when the source was created, so no other roster has them), and every
 * table's row count.
 */
async function isThisCopy(
  database: CopyTarget,
  counts: Record<string, number>,
  settings: readonly Setting[],
): Promise<boolean> {
  const theirs = await database.settings()
  if (
    JSON.stringify(theirs) !== JSON.stringify(settings.map(({ key, value }) => ({ key, value })))
  ) {
    return false
  }
  for (const [table, expected] of Object.entries(counts)) {
    if ((await database.count(table)) !== expected) return false
  }
  return (await database.count('login_failures')) === 0
}

/** Deletes an interrupted run's objects (and multipart uploads) and their pending rows. */
async function removeLeftovers(
  database: CopyTarget,
  bucket: Bucket | null,
  ids: string[],
): Promise<void> {
  if (bucket !== null) await bucket.files.discard(ids)
  else await database.pendingFiles.remove(ids)
  if ((await database.pendingIds()).length > 0) {
    throw new CopyError(
      'could not delete what an interrupted copy left in the bucket; check the bucket and run roster copy again',
    )
  }
}

async function refuseNonEmptyBucket(store: FileStore): Promise<void> {
  let first: IteratorResult<string>
  try {
    first = await store.list()[Symbol.asyncIterator]().next()
  } catch (error) {
    throw new CopyError(`the bucket is not usable: ${(error as Error).message.split('\n')[0]}`)
  }
  if (first.done !== true) {
    throw new CopyError(
      `the target bucket already holds objects at ${store.description}; roster copy only fills an empty one`,
    )
  }
}

/**
 * One file, read from the upload folder and hashed on the way: into the bucket under the same
 * id, or (files staying on disk) only checked.
 */
async function copyFile(
  uploadDir: string,
  file: CopiedFile,
  bucket: Bucket | null,
  placed: string[],
): Promise<void> {
  const local = Bun.file(join(uploadDir, file.id))
  if (!(await local.exists())) {
    throw new CopyError(`uploaded file ${file.id} is missing from ${uploadDir}`)
  }
  const limits = {
    maxFileSize: Number.MAX_SAFE_INTEGER,
    budget: { remaining: Number.MAX_SAFE_INTEGER },
  }
  let sha256: string
  if (bucket === null) {
    sha256 = await sha256Of(local.stream())
  } else {
    placed.push(file.id)
    sha256 = (await bucket.files.receive(local.stream(), limits, file.id)).sha256
  }
  if (sha256 !== file.sha256) {
    throw new CopyError(`uploaded file ${file.id} does not match its recorded SHA-256`)
  }
}

async function sha256Of(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of chunks) hasher.update(chunk)
  return hasher.digest('hex')
}

/** Row counts and (in a bucket) every object's SHA-256, read back from the target. */
async function verify(
  database: CopyTarget,
  counts: Record<string, number>,
  files: CopiedFile[],
  bucket: Bucket | null,
): Promise<void> {
  for (const [table, expected] of Object.entries(counts)) {
    const actual = await database.count(table)
    if (actual !== expected) {
      throw new CopyError(
        `verification failed: ${table} has ${actual} rows, the source ${expected}`,
      )
    }
  }
  if (bucket === null) return
  for (const file of files) {
    const bytes = await bucket.store.read(file.id, null)
    const chunks = bytes instanceof Blob ? bytes.stream() : bytes
    if ((await sha256Of(chunks)) !== file.sha256) {
      throw new CopyError(`verification failed: object ${file.id} does not match its SHA-256`)
    }
  }
}
