import { accessSync, constants, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { ApiKeyStore } from './auth/api-keys'
import { type Authenticator, createAuthenticator } from './auth/authenticator'
import { BasicCache } from './auth/basic'
import { LoginLimiter, MemoryLoginFailures } from './auth/limiter'
import type { CredentialStore } from './auth/sessions'
import { createSqliteApiKeyStore } from './auth/sqlite-api-keys'
import { createSqliteCredentialStore } from './auth/sqlite-sessions'
import { VERSION } from './build-info'
import type { Config } from './config'
import {
  DatabaseLostError,
  DatabaseOpenError,
  type Db,
  type FileIdentityGuard,
  fileIdentityGuard,
  openDatabase,
  openReader,
  type Store,
} from './db/client'
import { runMigrations } from './db/migrate'
import type { Transaction } from './db/unit'
import { WriteQueue } from './db/write-queue'
import { DiskWatch } from './health/disk'
import { createSqliteIdempotencyStore } from './idempotency/sqlite-store'
import type { IdempotencyClaims, IdempotencyStore } from './idempotency/store'
import type { Logger } from './log'
import { createMetrics, type Metrics } from './metrics/metrics'
import { Gauge } from './metrics/registry'
import type { FileStore } from './storage/file-store'
import { LocalDiskStore } from './storage/local-disk'
import { systemTimers, type Timers } from './timers'
import { createUploadService, type UploadService } from './uploads/service'
import { createSqliteUploadRecords } from './uploads/sqlite-records'
import { createSqliteUserStore } from './users/sqlite-store'
import type { UserStore, UserWrites } from './users/store'
import { builtInHandlers } from './webhooks/handlers'
import type { InboxOutcomes, WebhookInbox } from './webhooks/inbox'
import { createSqliteWebhookInbox } from './webhooks/sqlite-inbox'
import { WebhookWorker } from './webhooks/worker'

export { VERSION }

/** Every store's writes as one unit of work sees them (see db/unit.ts). */
export interface UnitStores {
  users: UserWrites
  idempotency: IdempotencyClaims
  inbox: InboxOutcomes
}

/** Everything a route needs, built once per server (or per test). */
export interface Deps {
  readonly config: Config
  readonly db: Db
  /** The writer, the reader and the group commit every write goes through. */
  readonly store: Store
  readonly log: Logger
  readonly now: () => Date
  /** The same clock in epoch milliseconds. */
  readonly clock: () => number
  readonly startedAt: number
  readonly dbPath: string
  /** Whether the database file is still the one that was opened (see fileIdentityGuard). */
  readonly databaseFile: FileIdentityGuard
  /** Where the local file store keeps uploads (tests look inside; nothing in src does). */
  readonly uploadDir: string
  /** Throws when the database does not answer or its file is no longer the one opened. */
  checkDatabase(): void
  /** Whether writes are being refused for lack of space (507s), for /health. */
  readonly disk: DiskWatch
  readonly users: UserStore
  readonly idempotency: IdempotencyStore
  /** Runs a unit of work over every store's writes. */
  readonly transaction: Transaction<UnitStores>
  readonly credentials: CredentialStore
  readonly apiKeys: ApiKeyStore
  readonly authenticator: Authenticator
  readonly fileStore: FileStore
  readonly uploads: UploadService
  readonly webhooks: { inbox: WebhookInbox; worker: WebhookWorker }
  readonly metrics: Metrics
  /** Row counts for GET /data. */
  counts(): Promise<{ users: number; uploads: number; webhook_events: number }>
  /** Commits what is pending and closes both connections. */
  close(): void
}

const systemNow = () => new Date()

/** The data directory, its database and upload folder could not be prepared. */
export class DataDirError extends Error {}

/**
 * Prepares the data directory, opens the database and applies the embedded migrations.
 * Throws DataDirError or DatabaseOpenError with a one-line reason. `sweepUploads` (the server
 * at start) deletes upload files a crash left behind; CLI commands must not, since a server
 * may be running beside them with uploads in flight.
 */
export function makeDeps(
  config: Config,
  log: Logger,
  now: () => Date = systemNow,
  options: { sweepUploads?: boolean; timers?: Timers } = {},
): Deps {
  const uploadDir = join(config.dataDir, 'uploads')
  prepareDirectory(config.dataDir)
  prepareDirectory(uploadDir)
  const dbPath = join(config.dataDir, 'roster.db')
  const db = openDatabase(dbPath, { sync: config.sync })
  try {
    runMigrations(db.$client)
  } catch (error) {
    db.$client.close()
    if (error instanceof DatabaseOpenError) throw error
    throw new DatabaseOpenError(`cannot migrate ${dbPath}: ${(error as Error).message}`)
  }
  const metrics = createMetrics(VERSION)
  const databaseFile = fileIdentityGuard(dbPath, (error) => log.error(error.message))
  const disk = new DiskWatch(config.dataDir, log)
  const writes = new WriteQueue(db.$client, {
    onCommit: (count) => {
      metrics.committed(count)
      disk.wrote()
    },
    beforeCommit: databaseFile.check,
    onDeferredError: (error) => {
      // Said once already, when it was noticed.
      if (error instanceof DatabaseLostError) return
      log.warn('a deferred write failed', { error: (error as Error).message })
    },
  })
  const store: Store = { db, reader: openReader(dbPath), writes }
  // Reads a real table (SELECT 1 would not touch the file) and notices a deleted database file.
  const ping = db.$client.query('SELECT count(*) FROM __drizzle_migrations')
  // Date.now, not a Date per call, when the clock is the system's (the hot paths read it).
  const clock = now === systemNow ? Date.now : () => now().getTime()
  const idempotency = createSqliteIdempotencyStore(store, clock)
  const credentials = createSqliteCredentialStore(store, clock)
  const apiKeys = createSqliteApiKeyStore(store, now)
  const limiter = new LoginLimiter(new MemoryLoginFailures(), clock)
  const users = createSqliteUserStore(store, now, {
    onPasswordChange: credentials.revokeAllForUserInWrite,
  })
  const fileStore = new LocalDiskStore(uploadDir)
  const uploadRecords = createSqliteUploadRecords(store, now)
  const uploads = createUploadService(uploadRecords, fileStore)
  const inbox = createSqliteWebhookInbox(store, now)
  const unitStores: UnitStores = {
    users: users.inUnit,
    idempotency: idempotency.inUnit,
    inbox: inbox.inUnit,
  }
  const transaction: Transaction<UnitStores> = (work) => writes.runUnit(() => work(unitStores))
  const timers = options.timers ?? { ...systemTimers, now: clock }
  const worker = new WebhookWorker(inbox, transaction, builtInHandlers(), timers, log)
  worker.onHandled = (event, status) => metrics.webhookEvents.inc({ scheme: event.scheme, status })
  metrics.registry.add(new Gauge('roster_users', 'Users stored.', () => users.count()))
  metrics.registry.add(
    new Gauge(
      'roster_webhook_events_pending',
      'Webhook events waiting to be handled or retried.',
      () => inbox.waiting(),
    ),
  )
  const authenticator = createAuthenticator({
    config,
    credentials,
    apiKeys,
    users,
    basicCache: new BasicCache(clock),
    limiter,
  })
  const deps: Deps = {
    config,
    db,
    store,
    log,
    now,
    clock,
    startedAt: clock(),
    dbPath,
    databaseFile,
    checkDatabase() {
      ping.get()
      databaseFile.check()
    },
    uploadDir,
    disk,
    users,
    idempotency,
    transaction,
    credentials,
    apiKeys,
    authenticator,
    fileStore,
    uploads,
    webhooks: { inbox, worker },
    metrics,
    counts: async () => ({
      users: await users.count(),
      uploads: await uploads.count(),
      webhook_events: await inbox.count(),
    }),
    close() {
      writes.flush()
      store.reader.close()
      db.$client.close()
    },
  }
  if (options.sweepUploads === true) {
    const swept = fileStore.sweep(uploadRecords.isKnownFile)
    if (swept > 0) log.warn(`removed ${swept} unfinished upload file(s) left by an earlier stop`)
  }
  // Committed before anything else runs: a caller that writes on the connection directly (a
  // test's fixture, a CLI command) must not find a group transaction open.
  void purgeExpired(deps)
  writes.flush()
  return deps
}

/** Deletes what has expired: sessions, access tokens, idempotency answers. Run at start and hourly. */
export async function purgeExpired(deps: Deps): Promise<void> {
  try {
    await Promise.all([deps.credentials.purgeExpired(), deps.idempotency.purgeExpired()])
  } catch (error) {
    // Nothing is lost: what expired stays refused, and the next round deletes it.
    deps.log.warn('could not delete expired sessions, tokens or idempotency answers', {
      error: (error as Error).message,
    })
  }
}

function prepareDirectory(path: string): void {
  try {
    // Created owner-only; an existing directory keeps the mode its owner gave it.
    mkdirSync(path, { recursive: true, mode: 0o700 })
    accessSync(path, constants.W_OK | constants.R_OK)
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'error'
    throw new DataDirError(`data directory ${path} is not writable (${code})`)
  }
}
