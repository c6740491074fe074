import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core'

/**
 * The PostgreSQL schema: the same tables and columns as `db/schema.ts` (SQLite), with epoch
 * milliseconds as `bigint`, users' ISO timestamps as `timestamptz(3)` and ids as identities
 * (never handed out again, like AUTOINCREMENT; `by default`, so `roster copy` can keep a copied
 * row's id). `test/db/schemas.test.ts` fails when the two diverge (names and nullability). Tables and columns only a shared
 * database needs, and indexes only PostgreSQL needs, are listed in SHARED_ONLY below.
 */

// Epoch milliseconds pass 2^31; read back as JavaScript numbers (exact up to 2^53).
const epochMs = (name: string) => bigint(name, { mode: 'number' })

export const users = pgTable(
  'users',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    name: text('name').notNull(),
    email: text('email').notNull(),
    emailKey: text('email_key').notNull().unique('users_email_key_unique'),
    passwordHash: text('password_hash'),
    version: integer('version').notNull().default(1),
    // timestamptz(3), where SQLite keeps ISO text: 8 bytes instead of 25 make a row a fifth
    // narrower, and a page's total is a count that reads every row (0001_user_timestamps).
    // Milliseconds, as the API shows them; src/backends/postgres/timestamps.ts turns them back into text.
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull(),
    role: text('role').notNull().default('member'),
    emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true, precision: 3 }),
    username: text('username'),
    usernameKey: text('username_key'),
    active: boolean('active').notNull().default(true),
    /**
     * The folded name and email `q` searches (users/search-key.ts), indexed with pg_trgm
     * (migration 0016).
     */
    searchKey: text('search_key').notNull().default(''),
  },
  (table) => [
    // The admins, found without reading every user (the last-admin rule counts them).
    index('users_admins_idx').on(table.id).where(sql`role = 'admin'`),
    // sort=name and sort=email (v2), in code-point order whatever the database's collation.
    index('users_name_order_idx').on(sql`search_key COLLATE "C"`, table.id),
    index('users_email_order_idx').on(sql`email_key COLLATE "C"`, table.id),
    // Usernames other than the email: a username that is the email (most users) is unique as
    // the email is, and leaving it out of this index spares every insert a second index write.
    uniqueIndex('users_username_key_unique')
      .on(table.usernameKey)
      .where(sql`username_key <> email_key`),
  ],
)

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    status: integer('status').notNull(),
    body: text('body').notNull(),
    location: text('location'),
    createdAt: epochMs('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.scope, table.key] }),
    index('idempotency_keys_created_at_idx').on(table.createdAt),
  ],
)

export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  createdAt: text('created_at')
    .notNull()
    .default(sql`to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`),
})

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: epochMs('created_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
  },
  (table) => [
    index('sessions_user_id_idx').on(table.userId),
    index('sessions_expires_at_idx').on(table.expiresAt),
  ],
)

export const accessTokens = pgTable(
  'access_tokens',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: epochMs('created_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
  },
  (table) => [
    index('access_tokens_user_id_idx').on(table.userId),
    index('access_tokens_expires_at_idx').on(table.expiresAt),
  ],
)

export const apiKeys = pgTable('api_keys', {
  id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
  name: text('name').notNull(),
  prefix: text('prefix').notNull(),
  keyHash: text('key_hash').notNull().unique('api_keys_key_hash_unique'),
  createdAt: text('created_at').notNull(),
  lastUsedAt: text('last_used_at'),
  revokedAt: text('revoked_at'),
  /** The key that made this one through the API (null: made on the command line). */
  parentId: integer('parent_id'),
  /**
   * The user whose session or token made this key, or its first ancestor (section 17): the key
   * works only while that user is an active admin. No foreign key: ids are never reused, and a
   * deleted user's keys must stay refused, not lose their maker.
   */
  createdByUser: integer('created_by_user'),
  scopes: text('scopes').notNull().default('*'),
  expiresAt: text('expires_at'),
})

export const uploads = pgTable(
  'uploads',
  {
    id: text('id').primaryKey(),
    description: text('description'),
    isPublic: boolean('public').notNull(),
    ownerUserId: integer('owner_user_id').references(() => users.id, { onDelete: 'set null' }),
    ownerKeyId: integer('owner_key_id').references(() => apiKeys.id, { onDelete: 'set null' }),
    createdAt: text('created_at').notNull(),
  },
  // A deleted user's or key's uploads are found by these (set null), not by a scan of them all.
  (table) => [
    index('uploads_created_at_idx').on(table.createdAt),
    index('uploads_owner_user_idx').on(table.ownerUserId),
    index('uploads_owner_key_idx').on(table.ownerKeyId),
  ],
)

export const files = pgTable(
  'files',
  {
    id: text('id').primaryKey(),
    uploadId: text('upload_id')
      .notNull()
      .references(() => uploads.id, { onDelete: 'cascade' }),
    field: text('field').notNull(),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    sha256: text('sha256').notNull(),
    position: integer('position').notNull(),
  },
  (table) => [index('files_upload_id_idx').on(table.uploadId)],
)

export const webhookEvents = pgTable(
  'webhook_events',
  {
    seq: integer('seq').primaryKey().generatedByDefaultAsIdentity(),
    eventId: text('event_id').notNull(),
    scheme: text('scheme').notNull(),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    receivedAt: text('received_at').notNull(),
    processedAt: text('processed_at'),
    nextAttemptAt: epochMs('next_attempt_at'),
    bodySha256: text('body_sha256'),
    /**
     * Shared database only: until when the instance that claimed this event may handle it. A
     * worker takes due events whose lease has run out (`FOR UPDATE SKIP LOCKED`), so an
     * instance killed mid-event leaves it to another once the lease ends.
     */
    leaseUntil: epochMs('lease_until'),
  },
  (table) => [
    uniqueIndex('webhook_events_scheme_event_id_unique').on(table.scheme, table.eventId),
    uniqueIndex('webhook_events_body_sha256_unique').on(table.bodySha256),
    index('webhook_events_due_idx').on(table.nextAttemptAt),
    // The retention purge deletes by age (--webhook-retention).
    index('webhook_events_received_at_idx').on(table.receivedAt),
  ],
)

/**
 * Shared database only: failed sign-ins and the password checks in flight, one row per key each,
 * so the limiter of every instance counts those of all of them (SQLite keeps them in the
 * process: one process per file). A check let through is a row with `attempt` and
 * `lease_until`; its failure clears `lease_until` (it then counts from `at`), its success or
 * abandonment deletes it.
 */
export const loginFailures = pgTable(
  'login_failures',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    /** `a:<email>` or `i:<address>`: what the failure counts against. */
    subject: text('subject').notNull(),
    at: epochMs('at').notNull(),
    /** The check this row belongs to (the limiter's reservation). */
    attempt: text('attempt'),
    /** While the check is in flight: until when it counts if its outcome never arrives. */
    leaseUntil: epochMs('lease_until'),
  },
  (table) => [
    index('login_failures_subject_at_idx').on(table.subject, table.at),
    index('login_failures_attempt_idx').on(table.attempt),
  ],
)

/**
 * Shared database only: objects being written to the bucket. A row is inserted before the
 * upload starts and deleted with the upload's commit (or after its object is deleted and its
 * multipart upload aborted), so an instance that dies mid-upload leaves a row, not an object
 * nothing tracks; the sweep deletes both. The bucket is never listed on the request path.
 */
export const pendingObjects = pgTable('pending_objects', {
  id: text('id').primaryKey(),
  startedAt: epochMs('started_at').notNull(),
  /** Refreshed while the upload streams in: a row idle for minutes is an abandoned upload's. */
  touchedAt: epochMs('touched_at'),
})

/** Tables and columns that only the shared database has, and why (see the schema test). */
export const SHARED_ONLY = {
  tables: ['login_failures', 'pending_objects'],
  columns: ['webhook_events.lease_until', 'audit_events.xid'],
  // sort=name and sort=email in code-point order. SQLite's unique email index already compares
  // so (PostgreSQL's is in the database's collation), and SQLite keeps its name order in a
  // table its search indexer fills off the write path (migration 0018), not in an index.
  indexes: ['audit_events_feed_idx', 'users_name_order_idx', 'users_email_order_idx'],
} as const

export const groups = pgTable('groups', {
  id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
  name: text('name').notNull(),
  nameKey: text('name_key').notNull().unique('groups_name_key_unique'),
  description: text('description'),
  version: integer('version').notNull().default(1),
  createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull(),
})

/**
 * What SCIM (CONTRACT section 13) says of a user beyond roster's own record: one row per user
 * that an identity provider described, none for users made through /users (their SCIM view is
 * derived from the record). The primary email is the record's `email`; `other_emails` holds
 * the rest as SCIM sent them (a JSON array of value, type, display), `primary_email_type` the
 * primary's type. Deleting the user deletes its profile.
 */
export const userProfiles = pgTable(
  'user_profiles',
  {
    userId: integer('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    externalId: text('external_id'),
    givenName: text('given_name'),
    familyName: text('family_name'),
    formattedName: text('formatted_name'),
    primaryEmailType: text('primary_email_type'),
    otherEmails: text('other_emails').notNull().default('[]'),
    employeeNumber: text('employee_number'),
    department: text('department'),
    managerId: text('manager_id'),
  },
  (table) => [index('user_profiles_external_id_idx').on(table.externalId)],
)

/**
 * What SCIM says of a group beyond roster's own: its `externalId` (RFC 7643 section 3.1), one
 * row per group an identity provider named so, none for groups made through /groups. Deleting
 * the group deletes it.
 */
export const groupProfiles = pgTable(
  'group_profiles',
  {
    groupId: integer('group_id')
      .primaryKey()
      .references(() => groups.id, { onDelete: 'cascade' }),
    /** null: SCIM made the group without one (the row still marks the group as SCIM's). */
    externalId: text('external_id'),
  },
  (table) => [index('group_profiles_external_id_idx').on(table.externalId)],
)

export const groupMembers = pgTable(
  'group_members',
  {
    groupId: integer('group_id')
      .notNull()
      .references(() => groups.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
  },
  (table) => [
    primaryKey({ columns: [table.groupId, table.userId] }),
    index('group_members_user_idx').on(table.userId, table.groupId),
  ],
)

export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    messageId: text('message_id').notNull().unique('mail_outbox_message_id_unique'),
    flow: text('flow').notNull(),
    toAddress: text('to_address').notNull(),
    /** The address lower-cased, as users' `email_key`: the per-address limit counts by it. */
    toKey: text('to_key').notNull(),
    /** Who asked for it (the per-IP limit); null for mail no request asked for. */
    clientIp: text('client_ip'),
    /** A requested message's links start here (--public-url, or the loopback origin asked on). */
    linkBase: text('link_base'),
    subject: text('subject').notNull(),
    textBody: text('text_body'),
    htmlBody: text('html_body'),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: text('created_at').notNull(),
    sentAt: text('sent_at'),
    nextAttemptAt: epochMs('next_attempt_at'),
    /** Claimed by one instance's worker until then (`FOR UPDATE SKIP LOCKED`). */
    leaseUntil: epochMs('lease_until'),
  },
  (table) => [
    index('mail_outbox_due_idx').on(table.nextAttemptAt),
    index('mail_outbox_to_key_idx').on(table.toKey, table.createdAt),
    index('mail_outbox_client_ip_idx').on(table.clientIp, table.createdAt),
  ],
)

export const accountTokens = pgTable(
  'account_tokens',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    flow: text('flow').notNull(),
    tokenHash: text('token_hash').notNull().unique('account_tokens_token_hash_unique'),
    codeHash: text('code_hash'),
    email: text('email').notNull(),
    tries: integer('tries').notNull().default(0),
    createdAt: epochMs('created_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
    usedAt: epochMs('used_at'),
  },
  (table) => [
    index('account_tokens_user_idx').on(table.userId, table.flow),
    // The addresses held for an undo (section 17): looked up on every write of an address.
    index('account_tokens_undo_email_idx')
      .on(sql`lower(${table.email})`)
      .where(sql`flow = 'email-change-undo' AND used_at IS NULL`),
  ],
)

/** A transaction id (xid8): the feed's order on a database with many writers. */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' })

/**
 * The audit log, as SQLite's. With several writers, `seq` is handed out before commit, so a
 * later seq can commit first; the feed instead orders by the writing transaction's `xid` and
 * shows an event only once every older transaction has ended (backends/postgres/audit.ts).
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    seq: bigint('seq', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    at: text('at').notNull(),
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    requestId: text('request_id'),
    ip: text('ip'),
    changes: text('changes'),
    xid: xid8('xid').notNull().default(sql`pg_current_xact_id()`),
  },
  (table) => [
    index('audit_events_target_idx').on(table.targetType, table.targetId, table.seq),
    index('audit_events_feed_idx').on(table.xid, table.seq),
  ],
)

/** Outbound webhooks' endpoints, as SQLite's (see there). */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
  url: text('url').notNull(),
  description: text('description'),
  events: text('events').notNull(),
  status: text('status').notNull().default('enabled'),
  disabledReason: text('disabled_reason'),
  secret: text('secret').notNull(),
  previousSecret: text('previous_secret'),
  previousSecretExpiresAt: text('previous_secret_expires_at'),
  startsAfter: text('starts_after').notNull(),
  version: integer('version').notNull().default(1),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

/**
 * Outbound deliveries, as SQLite's. The dispatcher queues them in feed order under a
 * compare-and-set of `webhook_dispatch`, so one instance at a time hands out ids: `id` order is
 * an endpoint's order here too. Senders lease an endpoint's oldest pending one.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: text('event_id').notNull(),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: epochMs('next_attempt_at'),
    leaseUntil: epochMs('lease_until'),
    firstAttemptAt: epochMs('first_attempt_at'),
    lastAttemptAt: epochMs('last_attempt_at'),
    deliveredAt: epochMs('delivered_at'),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    lastError: text('last_error'),
    durationMs: integer('duration_ms'),
    createdAt: text('created_at').notNull(),
  },
  (table) => [
    uniqueIndex('webhook_deliveries_endpoint_event_unique').on(table.endpointId, table.eventId),
    index('webhook_deliveries_endpoint_idx').on(table.endpointId, table.id),
    index('webhook_deliveries_pending_idx')
      .on(table.endpointId, table.id)
      .where(sql`status = 'pending'`),
  ],
)

/** Where the dispatcher has reached in the live feed, as SQLite's. */
export const webhookDispatch = pgTable('webhook_dispatch', {
  id: integer('id').primaryKey(),
  position: text('position').notNull(),
})

/** Passkeys (CONTRACT section 15); see the SQLite schema for the columns' meaning. */
export const passkeys = pgTable(
  'passkeys',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    credentialId: text('credential_id').notNull().unique('passkeys_credential_id_unique'),
    publicKey: text('public_key').notNull(),
    counter: bigint('counter', { mode: 'number' }).notNull().default(0),
    transports: text('transports').notNull().default('[]'),
    name: text('name').notNull(),
    backedUp: boolean('backed_up').notNull().default(false),
    createdAt: epochMs('created_at').notNull(),
    lastUsedAt: epochMs('last_used_at'),
    flaggedAt: epochMs('flagged_at'),
  },
  (table) => [index('passkeys_user_idx').on(table.userId)],
)

/** A user's TOTP secret; `last_step` makes each code single use. */
export const totpFactors = pgTable('totp_factors', {
  userId: integer('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  secret: text('secret').notNull(),
  createdAt: epochMs('created_at').notNull(),
  confirmedAt: epochMs('confirmed_at'),
  lastStep: bigint('last_step', { mode: 'number' }).notNull().default(0),
})

/** Recovery codes, hashed. */
export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull(),
    createdAt: epochMs('created_at').notNull(),
    usedAt: epochMs('used_at'),
  },
  (table) => [index('recovery_codes_user_idx').on(table.userId)],
)

/** WebAuthn challenges and mfa tokens, shared by every instance. */
export const authChallenges = pgTable(
  'auth_challenges',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    hash: text('hash').notNull().unique('auth_challenges_hash_unique'),
    purpose: text('purpose').notNull(),
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    tries: integer('tries').notNull().default(0),
    createdAt: epochMs('created_at').notNull(),
    expiresAt: epochMs('expires_at').notNull(),
    usedAt: epochMs('used_at'),
  },
  (table) => [
    index('auth_challenges_expires_idx').on(table.expiresAt),
    // A deleted user's challenges are found by this (cascade), not by a scan.
    index('auth_challenges_user_idx').on(table.userId),
  ],
)
