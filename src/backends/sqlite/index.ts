import { MemoryLoginFailures } from '../../auth/limiter'
import type { Config } from '../../config'
import { DatabaseOpenError } from '../../db/errors'
import type { Transaction } from '../../db/unit'
import type { Logger } from '../../log'
import type { Backend, UnitRows } from '../backend'
import { createSqliteAccountTokens } from './account-tokens'
import { createSqliteApiKeyRows } from './api-keys'
import { createSqliteAuditRows, type SqliteAuditRows } from './audit'
import {
  DatabaseLostError,
  fileIdentityGuard,
  openDatabase,
  openReader,
  type Store,
  sqliteFilePath,
} from './connection'
import { createSqliteFactors } from './factors'
import { createSqliteGroupRows } from './groups'
import { createSqliteIdempotencyStore } from './idempotency'
import { createSqliteWebhookInbox } from './inbox'
import { createSqliteMailOutbox } from './mail'
import { runMigrations } from './migrate'
import { createSqliteOutboundRows } from './outbound'
import { createSqliteScimRows } from './scim'
import { SearchIndexer } from './search-index'
import { createSqliteCredentialRows } from './sessions'
import { shareReadsPerTurn, snapshots } from './turn-reads'
import { createSqliteUploadRecords } from './uploads'
import { createSqliteUserRows } from './users'
import { WriteQueue } from './write-queue'

/**
 * The embedded database: `roster.db` in the data directory, migrated, with one writer and the
 * group commit (each write in its savepoint, no answer before its commit). `onCommit` hears of
 * every commit (metrics, the disk watch).
 */
export function openSqliteBackend(
  config: Config,
  options: {
    now: () => Date
    clock: () => number
    log: Logger
    onCommit: (writes: number) => void
    serving?: boolean
    turnReads?: boolean
  },
): Backend {
  const { now, clock, log } = options
  const dbPath = sqliteFilePath(config.dataDir)
  const db = openDatabase(dbPath, { sync: config.sync })
  let migrated: readonly string[]
  try {
    migrated = runMigrations(db.$client).applied
  } catch (error) {
    db.$client.close()
    if (error instanceof DatabaseOpenError) throw error
    throw new DatabaseOpenError(`cannot migrate ${dbPath}: ${(error as Error).message}`)
  }
  const databaseFile = fileIdentityGuard(dbPath, (error) => log.error(error.message))
  let audit: SqliteAuditRows | undefined
  let indexer: SearchIndexer | undefined
  const reader = openReader(dbPath)
  const turnReads = options.turnReads === true ? shareReadsPerTurn(reader) : null
  const writes = new WriteQueue(db.$client, {
    onCommit: (count) => {
      options.onCommit(count)
      audit?.committed()
      indexer?.wrote()
    },
    beforeCommit: () => {
      turnReads?.end()
      databaseFile.check()
    },
    onDeferredError: (error) => {
      // Said once already, when it was noticed.
      if (error instanceof DatabaseLostError) return
      log.warn('a deferred write failed', { error: (error as Error).message })
    },
  })
  const store: Store = {
    db,
    reader,
    writes,
    committedAlone: () => turnReads?.end(),
    snapshot: snapshots(reader, turnReads),
  }
  indexer = new SearchIndexer(store, clock)
  if (options.serving === true) indexer.start()
  // Reads a real table (SELECT 1 would not touch the file) and notices a deleted database file.
  const ping = db.$client.query('SELECT count(*) FROM __drizzle_migrations')
  const idempotency = createSqliteIdempotencyStore(store, clock)
  const credentials = createSqliteCredentialRows(store)
  const users = createSqliteUserRows(store, now)
  const uploadRecords = createSqliteUploadRecords(store, now)
  const inbox = createSqliteWebhookInbox(store, now)
  const groups = createSqliteGroupRows(store)
  const mail = createSqliteMailOutbox(store, now)
  const apiKeys = createSqliteApiKeyRows(store)
  audit = createSqliteAuditRows(store)
  const outbound = createSqliteOutboundRows(store)
  const scim = createSqliteScimRows(store)
  // One writer: a unit of work always sees the same rows (the writer's), so one object serves.
  const unitRows: UnitRows = {
    users: users.inUnit,
    credentials: credentials.inUnit,
    idempotency: idempotency.inUnit,
    inbox: inbox.inUnit,
    groups: groups.inUnit,
    memberships: groups.inUnit,
    mail: mail.inUnit,
    accountTokens: createSqliteAccountTokens(store),
    audit: audit.inUnit,
    apiKeys: apiKeys.inUnit,
    uploads: uploadRecords.inUnit,
    outbound: outbound.inUnit,
    scimProfiles: scim.inUnit,
    factors: createSqliteFactors(store),
  }
  const transaction: Transaction<UnitRows> = (work) => writes.runUnit(() => work(unitRows))
  return {
    description: `SQLite ${dbPath}`,
    migrated,
    shared: false,
    users,
    idempotency,
    credentials,
    apiKeys,
    groups,
    // One process per file: failed sign-ins live in memory.
    loginFailures: new MemoryLoginFailures(),
    uploadRecords,
    inbox,
    mail,
    audit,
    outbound,
    scim,
    pendingFiles: null,
    transaction,
    flush: () => writes.flush(),
    catchUp: () => (indexer as SearchIndexer).catchUp(),
    checkDatabase() {
      ping.get()
      databaseFile.check()
    },
    connectionsInUse: () => null,
    async close() {
      indexer?.stop()
      writes.flush()
      turnReads?.end()
      store.reader.close()
      db.$client.close()
    },
  }
}
