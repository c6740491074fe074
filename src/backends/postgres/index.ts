import type { SQL } from 'bun'
import type { Config } from '../../config'
import type { Transaction } from '../../db/unit'
import { withinMs } from '../../timers'
import type { Backend, UnitRows } from '../backend'
import { createPgAccountTokens } from './account-tokens'
import { createPgApiKeyRows } from './api-keys'
import { createPgAuditRows } from './audit'
import { connectPostgres, openPostgres, redactUrl } from './connection'
import { createPgFactors } from './factors'
import { createPgGroupRows } from './groups'
import { createPgIdempotencyStore } from './idempotency'
import { createPgWebhookInbox } from './inbox'
import { PgLoginFailures } from './login-failures'
import { createPgMailOutbox } from './mail'
import { runPgMigrations } from './migrate'
import { createPgOutboundRows } from './outbound'
import { createPgPendingFiles } from './pending-objects'
import { createPgScimRows } from './scim'
import { createPgCredentialRows } from './sessions'
import { createPgUploadRecords } from './uploads'
import { createPgUserRows } from './users'

/** Connections each instance keeps open at most. */
const POOL_SIZE = 10
/** /health gives PostgreSQL this long to answer before it calls the database failing. */
const HEALTH_TIMEOUT_MS = 3000

/**
 * A PostgreSQL database that several instances share: connected, checked, migrated once (under
 * an advisory lock). A unit of work is one transaction on one pooled connection.
 */
export async function openPostgresBackend(
  config: Config & { databaseUrl: string },
  options: { now: () => Date; clock: () => number },
): Promise<Backend> {
  const { now, clock } = options
  const db = openPostgres(config.databaseUrl, {
    prepare: config.databasePrepare,
    max: POOL_SIZE,
  })
  const pool: SQL = db.$client
  let inUse = 0
  try {
    const version = await connectPostgres(db, config.databaseUrl)
    const { applied: migrated } = await runPgMigrations(pool)
    const users = createPgUserRows(pool, now)
    const credentials = createPgCredentialRows(pool)
    const idempotency = await createPgIdempotencyStore(pool, clock)
    const inbox = createPgWebhookInbox(pool, now)
    const groups = createPgGroupRows(pool)
    const mail = createPgMailOutbox(pool, now)
    const audit = createPgAuditRows(pool)
    const apiKeys = createPgApiKeyRows(pool)
    const uploadRecords = createPgUploadRecords(pool, now)
    const outbound = createPgOutboundRows(pool)
    const scim = createPgScimRows(pool)
    const transaction: Transaction<UnitRows> = (work) => {
      inUse += 1
      return pool
        .begin((tx) =>
          work({
            users: users.inUnit(tx),
            credentials: credentials.inUnit(tx),
            idempotency: idempotency.inUnit(tx),
            inbox: inbox.inUnit(tx),
            groups: groups.inUnit(tx),
            memberships: groups.inUnit(tx),
            mail: mail.inUnit(tx),
            accountTokens: createPgAccountTokens(tx),
            audit: audit.inUnit(tx),
            apiKeys: apiKeys.inUnit(tx),
            uploads: uploadRecords.inUnit(tx),
            outbound: outbound.inUnit(tx),
            scimProfiles: scim.inUnit(tx),
            factors: createPgFactors(tx),
          }),
        )
        .finally(() => {
          inUse -= 1
        })
    }
    return {
      description: `PostgreSQL ${version} at ${redactUrl(config.databaseUrl)}`,
      migrated,
      shared: true,
      users,
      idempotency,
      credentials,
      apiKeys,
      groups,
      loginFailures: new PgLoginFailures(pool),
      uploadRecords,
      inbox,
      mail,
      audit,
      outbound,
      scim,
      pendingFiles: createPgPendingFiles(pool),
      transaction,
      flush: () => {},
      catchUp: () => Promise.resolve(),
      async checkDatabase() {
        await withinMs(pool`SELECT 1`, HEALTH_TIMEOUT_MS, 'PostgreSQL did not answer')
      },
      connectionsInUse: () => inUse,
      async close() {
        await pool.close({ timeout: 5 })
      },
    }
  } catch (error) {
    await pool.close().catch(() => {})
    throw error
  }
}
