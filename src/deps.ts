import { accessSync, constants, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type AccountFlows, createAccountFlows } from './accounts/flows'
import { loadTemplates } from './accounts/templates'
import { FeedHub } from './audit/feed-hub'
import { type AuditLog, type AuditWrites, auditWrites, createAuditLog } from './audit/log'
import {
  type ApiKeyStore,
  type ApiKeyWrites,
  apiKeyWrites,
  createApiKeyStore,
} from './auth/api-keys'
import { type Authenticator, createAuthenticator } from './auth/authenticator'
import { BasicCache } from './auth/basic'
import { createSignInDoor, type SignInDoor } from './auth/door'
import { LoginLimiter } from './auth/limiter'
import { hashPassword } from './auth/passwords'
import { type CredentialStore, createCredentialStore } from './auth/sessions'
import { type Backend, openBackend, type UnitRows } from './backends/index'
import { openFileStore } from './backends/storage'
import { VERSION } from './build-info'
import { type Config, mailHost } from './config'
import type { Transaction } from './db/unit'
import { postTo } from './egress/client'
import { createSecondFactors, type SecondFactors } from './factors/service'
import { relyingParty } from './factors/webauthn'
import { createGroupStore, type GroupStore, type GroupWrites, groupWrites } from './groups/store'
import { DiskWatch } from './health/disk'
import type { IdempotencyStore } from './idempotency/store'
import type { Logger } from './log'
import type { MailOutbox } from './mail/outbox'
import { MailWorker } from './mail/worker'
import { createMetrics, type Metrics } from './metrics/metrics'
import { Gauge } from './metrics/registry'
import { Dispatcher } from './outbound/dispatcher'
import { WebhookSender } from './outbound/sender'
import {
  createEndpointStore,
  type EndpointStore,
  type OutboundWrites,
  outboundWrites,
} from './outbound/store'
import { ScimGroups } from './scim/groups'
import { ScimUsers } from './scim/service'
import { createSmtpTransport } from './smtp/transport'
import type { FileStore } from './storage/file-store'
import { systemTimers, type Timers } from './timers'
import { createUploadFiles } from './uploads/files'
import { createUploadService, type UploadService } from './uploads/service'
import type { UserRecord } from './users/records'
import { createUserStore, type UserStore, type UserUnitWrites, userWrites } from './users/store'
import { builtInHandlers } from './webhooks/handlers'
import type { WebhookInbox } from './webhooks/inbox'
import { WebhookWorker } from './webhooks/worker'

/** Every store's writes as one unit of work sees them: the backend's rows with the rules. */
export interface UnitStores
  extends Omit<UnitRows, 'users' | 'groups' | 'audit' | 'apiKeys' | 'outbound'> {
  users: UserUnitWrites
  groups: GroupWrites
  audit: AuditWrites
  apiKeys: ApiKeyWrites
  outbound: OutboundWrites
}
export { VERSION }

/** Everything a route needs, built once per server (or per test). */
export interface Deps {
  readonly config: Config
  readonly log: Logger
  readonly now: () => Date
  /** The same clock in epoch milliseconds. */
  readonly clock: () => number
  readonly startedAt: number
  /** What the startup line says about the database and the storage (never a password). */
  readonly describe: { database: string; storage: string }
  /** The migrations opening the database applied (none when it was up to date). */
  readonly migrated: readonly string[]
  /** Throws (or rejects) when the database does not answer. */
  checkDatabase(): void | Promise<void>
  /** Whether writes are being refused for lack of space (507s), for /health. */
  readonly disk: DiskWatch
  readonly users: UserStore
  readonly idempotency: IdempotencyStore
  /** Runs a unit of work over every store's writes. */
  readonly transaction: Transaction<UnitStores>
  readonly credentials: CredentialStore
  readonly apiKeys: ApiKeyStore
  readonly groups: GroupStore
  readonly authenticator: Authenticator
  /** The one door every sign-in passes: admission, the second factor, issuing (auth/door.ts). */
  readonly door: SignInDoor<UserRecord>
  readonly fileStore: FileStore
  readonly uploads: UploadService
  readonly webhooks: { inbox: WebhookInbox; worker: WebhookWorker }
  /** The outbox, its worker (which sends only with --smtp-url) and the flows that write it. */
  readonly mail: { outbox: MailOutbox; worker: MailWorker; flows: AccountFlows }
  readonly metrics: Metrics
  /** The audit log: what changed, who changed it, and the live feed's reads. */
  readonly audit: AuditLog
  /** The audit log's live feed, one reader for every subscriber of this instance. */
  readonly feed: FeedHub
  /**
   * Outbound webhooks: the endpoints, the dispatcher that queues the audit log's events for
   * them and the sender that delivers them (both started by the server).
   */
  readonly outbound: Outbound
  /** SCIM's Users and Groups over the users' and groups' rules (CONTRACT section 13). */
  readonly scimUsers: ScimUsers
  readonly scimGroups: ScimGroups
  /** Passkeys, TOTP and recovery codes (CONTRACT section 15). */
  readonly factors: SecondFactors
  /** Row counts for GET /data. */
  counts(): Promise<{ users: number; uploads: number; webhook_events: number }>
  /** Deletes upload files a failure left behind (see FileStore.sweep); resolves to how many. */
  sweepUploads(): Promise<number>
  /**
   * Resolves once the clean-ups started by failed uploads and deletions have finished (they
   * run after the answer; what they could not delete is pending for the sweep).
   */
  uploadCleanups(): Promise<void>
  /**
   * Finishes now the work the database otherwise does when idle (SQLite: indexing users for
   * `q`, which `roster migrate` completes ahead of a start).
   */
  catchUp(): Promise<void>
  /** Commits what is pending and closes the database. */
  close(): Promise<void>
}

/** Outbound webhooks as the server runs them. */
export interface Outbound {
  readonly endpoints: EndpointStore
  readonly dispatcher: Dispatcher
  readonly sender: WebhookSender
  start(): Promise<void>
  /** Stops queueing and cuts attempts under way short (they are sent again at the next start). */
  stop(): Promise<void>
}

const systemNow = () => new Date()

/** How long closing waits for the clean-ups of failed uploads and deletions under way. */
const CLEANUP_GRACE_MS = 5000

/** How often a worker on a shared database looks for events other instances recorded. */
const SHARED_INBOX_POLL_MS = 2000

/** The data directory, its database and upload folder could not be prepared. */
export class DataDirError extends Error {}

/**
 * Prepares the data directory, opens the database (SQLite in the data directory, or
 * PostgreSQL with --database-url) and applies the embedded migrations. Rejects with
 * DataDirError or DatabaseOpenError and a one-line reason. `sweepUploads` (the server at start)
 * deletes upload files a crash left behind; CLI commands must not, since a server may be
 * running beside them with uploads in flight.
 */
export async function makeDeps(
  config: Config,
  log: Logger,
  now: () => Date = systemNow,
  options: {
    sweepUploads?: boolean
    /** The server: the backend's idle work runs (CLI commands leave it to the server). */
    serving?: boolean
    /** Reads of one event-loop turn share a snapshot (see BackendOptions). */
    turnReads?: boolean
    timers?: Timers
    /** Where S3 settings are read (the process environment unless given). */
    env?: Record<string, string | undefined>
  } = {},
): Promise<Deps> {
  const uploadDir = join(config.dataDir, 'uploads')
  prepareDirectory(config.dataDir)
  prepareDirectory(uploadDir)
  const metrics = createMetrics(VERSION)
  const disk = new DiskWatch(config.dataDir, log)
  // Date.now, not a Date per call, when the clock is the system's (the hot paths read it).
  const clock = now === systemNow ? Date.now : () => now().getTime()
  const backend = await openBackend(config, {
    now,
    clock,
    log,
    onCommit: (count) => {
      metrics.committed(count)
      disk.wrote()
    },
    serving: options.serving === true,
    turnReads: options.turnReads === true,
  })
  const fileStore = await openFileStore(config, uploadDir, backend, options.env, log).catch(
    async (error: unknown) => {
      await backend.close()
      throw error
    },
  )
  const files = createUploadFiles({
    store: fileStore,
    pending: backend.pendingFiles,
    registered: backend.uploadRecords.registered,
    clock,
  })
  const { inbox } = backend
  const transaction = withRules(backend.transaction, now)
  const audit = createAuditLog(backend.audit, now)
  const uploads = createUploadService(backend.uploadRecords, files, config, transaction, now)
  const users = createUserStore(backend.users, transaction)
  const credentials = createCredentialStore(backend.credentials, transaction, clock)
  const apiKeys = createApiKeyStore(backend.apiKeys, transaction, now)
  const groups = createGroupStore(backend.groups, transaction)
  const timers = options.timers ?? { ...systemTimers, now: clock }
  const feed = new FeedHub(audit.feed, timers)
  const worker = new WebhookWorker(inbox, transaction, builtInHandlers(), timers, log)
  if (backend.shared) worker.pollMs = SHARED_INBOX_POLL_MS
  worker.onHandled = (event, status) => metrics.webhookEvents.inc({ scheme: event.scheme, status })
  const mail = mailOf(config, backend, transaction, users, timers, log, now)
  const outbound = outboundOf(config, backend, transaction, audit, timers, log)
  addGauges(metrics, backend)
  const authenticator = createAuthenticator({
    config,
    credentials,
    apiKeys,
    users,
    basicCache: new BasicCache(clock),
    limiter: new LoginLimiter(backend.loginFailures, clock),
    audit,
    now: clock,
  })
  const factors = createSecondFactors({
    transaction,
    clock,
    party: relyingParty(config.publicUrl, config.webauthnOrigins),
    issuer: config.publicUrl === null ? 'roster' : new URL(config.publicUrl).hostname,
  })
  const deps: Deps = {
    config,
    log,
    now,
    clock,
    startedAt: clock(),
    describe: { database: backend.description, storage: fileStore.description },
    migrated: backend.migrated,
    checkDatabase: backend.checkDatabase,
    disk,
    users,
    idempotency: backend.idempotency,
    transaction,
    credentials,
    apiKeys,
    groups,
    authenticator,
    fileStore,
    uploads,
    webhooks: { inbox, worker },
    mail,
    metrics,
    audit,
    feed,
    outbound,
    scimUsers: new ScimUsers({
      users,
      profiles: backend.scim,
      transaction,
      hashPassword,
      acceptPasswords: config.scimPasswords,
    }),
    scimGroups: new ScimGroups({
      groups,
      roleOf: async (userId) => (await users.get(userId))?.role ?? null,
      rows: backend.scim,
      transaction,
    }),
    factors,
    door: createSignInDoor({
      requireVerifiedEmail: config.requireVerifiedEmail,
      users,
      credentials,
      factors,
      confirmPassword: authenticator.confirmPassword,
      clock,
    }),
    counts: async () => ({
      users: await users.count(),
      uploads: await uploads.count(),
      webhook_events: await inbox.count(),
    }),
    sweepUploads: () => files.sweep(),
    uploadCleanups: () => files.settled(),
    catchUp: () => backend.catchUp(),
    close: async () => {
      feed.close()
      // Clean-ups under way get a moment to finish; what they leave stays pending for the sweep.
      await Promise.race([files.settled(), Bun.sleep(CLEANUP_GRACE_MS)])
      await backend.close()
    },
  }
  // A shared store (a bucket) is swept by purgeExpired below, as every hour.
  if (options.sweepUploads === true && !fileStore.shared) {
    const swept = await deps.sweepUploads()
    if (swept > 0) log.warn(`removed ${swept} unfinished upload file(s) left by an earlier stop`)
  }
  // Committed before anything else runs: a caller that writes on the connection directly (a
  // test's fixture, a CLI command) must not find a group transaction open.
  const purged = purgeExpired(deps)
  backend.flush()
  await purged
  return deps
}

/**
 * The outbox, the flows that write it and its worker: the worker writes what requests asked
 * for (through the flows) and, with --smtp-url, sends it; the flows wake it.
 */
function mailOf(
  config: Config,
  backend: Backend,
  transaction: Transaction<UnitStores>,
  users: UserStore,
  timers: Timers,
  log: Logger,
  now: () => Date,
): Deps['mail'] {
  const outbox = backend.mail
  const flows = createAccountFlows({
    transaction,
    users,
    templates: loadTemplates(config.mailTemplates),
    messageHost: mailHost(config.publicUrl),
    now,
    onMail: () => worker.wake(),
  })
  const transport =
    config.smtpUrl === null ? null : createSmtpTransport(config.smtpUrl, config.smtpTimeout)
  const worker = new MailWorker(outbox, transport, config.mailFrom, timers, log, flows.prepare)
  if (backend.shared) worker.pollMs = SHARED_INBOX_POLL_MS
  return { outbox, worker, flows }
}

/**
 * Outbound webhooks: the endpoints (their URLs checked against --webhook-allow-private), the
 * dispatcher woken by every commit of an audit event, and the sender it wakes.
 */
function outboundOf(
  config: Config,
  backend: Backend,
  transaction: Transaction<UnitStores>,
  audit: AuditLog,
  timers: Timers,
  log: Logger,
): Outbound {
  const policy = { allowPrivate: config.webhookAllowPrivate }
  const sender = new WebhookSender(
    backend.outbound,
    transaction,
    (url, body, headers, timeoutMs, signal) =>
      postTo(url, body, headers, policy, timeoutMs, signal),
    timers,
    log,
    `roster/${VERSION}`,
  )
  sender.policy = { ...sender.policy, windowMs: config.webhookRetryWindow }
  const dispatcher = new Dispatcher(backend.outbound, audit.feed, timers, log, () => sender.wake())
  if (backend.shared) {
    sender.pollMs = SHARED_INBOX_POLL_MS
    dispatcher.pollMs = SHARED_INBOX_POLL_MS
  }
  const endpoints = createEndpointStore(backend.outbound, transaction, {
    policy,
    feedHead: () => audit.feed.head(),
    changed: () => {
      dispatcher.endpointsChanged()
      sender.wake()
    },
  })
  return {
    endpoints,
    dispatcher,
    sender,
    async start() {
      await dispatcher.start()
      sender.start()
    },
    async stop() {
      await dispatcher.stop()
      await sender.stop()
    },
  }
}

/**
 * The backend's unit of work with the domains' rules on its rows. SQLite hands every unit the
 * same rows, so their ruled view is made once per rows object.
 */
function withRules(transaction: Transaction<UnitRows>, now: () => Date): Transaction<UnitStores> {
  const ruled = new WeakMap<UnitRows, UnitStores>()
  const storesOf = (rows: UnitRows): UnitStores => {
    let stores = ruled.get(rows)
    if (stores === undefined) {
      const audit = auditWrites(rows.audit, now)
      stores = {
        ...rows,
        users: userWrites({ ...rows, audit }, now),
        groups: groupWrites({ groups: rows.groups, audit }, now),
        audit,
        apiKeys: apiKeyWrites({ apiKeys: rows.apiKeys, audit }, now),
        outbound: outboundWrites({ outbound: rows.outbound, audit }, () => now().getTime()),
      }
      ruled.set(rows, stores)
    }
    return stores
  }
  return (work) => transaction((rows) => work(storesOf(rows)))
}

function addGauges(metrics: Metrics, backend: Backend): void {
  metrics.registry.add(new Gauge('roster_users', 'Users stored.', () => backend.users.count()))
  metrics.registry.add(
    new Gauge(
      'roster_webhook_events_pending',
      'Webhook events waiting to be handled or retried.',
      () => backend.inbox.waiting(),
    ),
  )
  if (backend.connectionsInUse() !== null) {
    metrics.registry.add(
      new Gauge(
        'roster_database_connections_in_use',
        'PostgreSQL connections of this instance busy with a unit of work.',
        () => backend.connectionsInUse() ?? 0,
      ),
    )
  }
}

/**
 * Deletes what has expired: sessions, access tokens, idempotency answers, webhook and audit
 * events past their retention, and in a bucket the objects of uploads whose instance died (past
 * their grace). Run at start and hourly, by every instance: each is one statement or a
 * claim-free delete, safe to run anywhere at once.
 */
export async function purgeExpired(deps: Deps): Promise<void> {
  try {
    const [, , , events, audited, deliveries] = await Promise.all([
      deps.credentials.purgeExpired(),
      deps.idempotency.purgeExpired(),
      sweepAbandonedUploads(deps),
      inBatches(deps.config.webhookRetention, deps, (cutoff, limit) =>
        deps.webhooks.inbox.purgeReceivedBefore(cutoff, limit),
      ),
      inBatches(deps.config.auditRetention, deps, (cutoff, limit) =>
        deps.audit.purgeBefore(cutoff, limit),
      ),
      // A delivery is a copy of an event: its log is kept as long as the event.
      inBatches(deps.config.auditRetention, deps, (cutoff, limit) =>
        deps.outbound.endpoints.purgeDeliveriesBefore(cutoff, limit),
      ),
    ])
    if (events > 0) deps.log.info(`deleted ${events} webhook event(s) past --webhook-retention`)
    if (audited > 0) deps.log.info(`deleted ${audited} audit event(s) past --audit-retention`)
    if (deliveries > 0) {
      deps.log.info(`deleted ${deliveries} webhook delivery record(s) past --audit-retention`)
    }
  } catch (error) {
    // Nothing is lost: what expired stays refused, and the next round deletes it.
    deps.log.warn(
      'could not delete expired sessions, tokens, idempotency answers, old webhook or audit events, or abandoned uploads',
      {
        error: (error as Error).message,
      },
    )
  }
}

/**
 * In a bucket: deletes the objects (and aborts the multipart uploads) of uploads an instance left
 * when it died or could not clean up after (the bucket was down), once idle for minutes. Run by
 * the housekeeping and, while serving, every minute. Nothing for the disk, swept at start only.
 */
export async function sweepAbandonedUploads(deps: Deps): Promise<void> {
  if (!deps.fileStore.shared) return
  const swept = await deps.sweepUploads()
  if (swept > 0) {
    deps.log.warn(`removed ${swept} upload object(s) left by a failed or interrupted upload`)
  }
}

/** Rows a purge deletes per statement, and statements per round: bounded work, short locks. */
const PURGE_BATCH = 1000
const PURGE_ROUNDS = 50

/**
 * Rows older than `retention` (webhook events, audit events), deleted in bounded batches: each
 * statement short, the round capped, the rest left for the next hour.
 */
async function inBatches(
  retention: number,
  deps: Deps,
  purge: (cutoff: string, limit: number) => Promise<number>,
): Promise<number> {
  const cutoff = new Date(deps.clock() - retention).toISOString()
  let deleted = 0
  for (let round = 0; round < PURGE_ROUNDS; round += 1) {
    const gone = await purge(cutoff, PURGE_BATCH)
    deleted += gone
    if (gone < PURGE_BATCH) break
  }
  return deleted
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
