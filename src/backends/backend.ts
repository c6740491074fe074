import type { AccountTokenWrites } from '../accounts/tokens'
import type { AuditRows, AuditWriteRows } from '../audit/log'
import type { ApiKeyRows, ApiKeyWriteRows } from '../auth/api-keys'
import type { LoginFailureLog } from '../auth/limiter'
import type { CredentialRows, CredentialWrites } from '../auth/sessions'
import type { Transaction } from '../db/unit'
import type { FactorWrites } from '../factors/store'
import type { GroupRows, GroupWriteRows, MembershipWrites } from '../groups/store'
import type { IdempotencyClaims, IdempotencyStore } from '../idempotency/store'
import type { MailOutbox, MailWrites } from '../mail/outbox'
import type { OutboundRows, OutboundWriteRows } from '../outbound/store'
import type { ScimProfileRows, ScimProfileWrites } from '../scim/profile'
import type { PendingFiles } from '../uploads/files'
import type { UploadRecords, UploadRecordWrites } from '../uploads/records'
import type { UserRows, UserWriteRows } from '../users/store'
import type { InboxOutcomes, WebhookInbox } from '../webhooks/inbox'

/** Every store's rows as one unit of work sees them (see db/unit.ts); deps.ts adds the rules. */
export interface UnitRows {
  users: UserWriteRows
  credentials: CredentialWrites
  idempotency: IdempotencyClaims
  inbox: InboxOutcomes
  groups: GroupWriteRows
  memberships: MembershipWrites
  mail: MailWrites
  accountTokens: AccountTokenWrites
  audit: AuditWriteRows
  apiKeys: ApiKeyWriteRows
  uploads: UploadRecordWrites
  outbound: OutboundWriteRows
  scimProfiles: ScimProfileWrites
  factors: FactorWrites
}

/**
 * One database's implementation of every store, opened and migrated: SQLite in the data
 * directory (the default) or a PostgreSQL database that several instances share.
 */
export interface Backend {
  /** What the startup line says about the database (never a password). */
  readonly description: string
  /** The migrations this open applied (none when the database was up to date). */
  readonly migrated: readonly string[]
  /** Whether other instances may share this database (their workers share its inbox). */
  readonly shared: boolean
  readonly users: UserRows
  readonly idempotency: IdempotencyStore
  readonly credentials: CredentialRows
  readonly apiKeys: ApiKeyRows
  readonly groups: GroupRows
  readonly loginFailures: LoginFailureLog
  readonly uploadRecords: UploadRecords
  readonly inbox: WebhookInbox
  readonly mail: MailOutbox
  readonly audit: AuditRows
  /** Outbound webhooks: endpoints, the dispatcher's place and the delivery queue. */
  readonly outbound: OutboundRows
  /** What SCIM keeps of users beyond their records, and SCIM's filtered lists. */
  readonly scim: ScimProfileRows
  /** Files being written to a shared store (a bucket); null where none is offered (SQLite). */
  readonly pendingFiles: PendingFiles | null
  /** Runs a unit of work over every store's rows. */
  readonly transaction: Transaction<UnitRows>
  /** Throws (or rejects) when the database does not answer. */
  checkDatabase(): void | Promise<void>
  /** Connections in use, for /metrics; null when the database has no pool. */
  connectionsInUse(): number | null
  /** Commits what is waiting for a commit now (SQLite's group commit; nothing on PostgreSQL). */
  flush(): void
  /**
   * Finishes at once the work the backend otherwise does when idle (SQLite: indexing users for
   * `q`; nothing on PostgreSQL, whose indexes keep themselves).
   */
  catchUp(): Promise<void>
  /** Commits what is pending and closes the connections. */
  close(): Promise<void>
}
