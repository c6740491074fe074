import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * User records. `id` is AUTOINCREMENT so SQLite never hands out an id again after a delete.
 * `email_key` is the lower-cased email and carries the uniqueness rule (JavaScript's
 * toLowerCase folds all of Unicode, SQLite's NOCASE only ASCII). `version` grows on every
 * write and is what the ETag is made from.
 */
export const users = sqliteTable(
  'users',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    email: text('email').notNull(),
    emailKey: text('email_key').notNull().unique('users_email_key_unique'),
    passwordHash: text('password_hash'),
    version: integer('version').notNull().default(1),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    /** `member` or `admin` (auth/access.ts); existing users became members. */
    role: text('role').notNull().default('member'),
    /** When the user proved it reads mail at `email` (CONTRACT section 14); null until then. */
    emailVerifiedAt: text('email_verified_at'),
    /**
     * The name the user signs in with besides its email (SCIM's userName, CONTRACT section 13);
     * the email for users made through /users. `username_key` is it lower-cased and carries the
     * uniqueness rule. Null only in the moment a migration adds them (it fills them at once).
     */
    username: text('username'),
    usernameKey: text('username_key'),
    /** False: the account may not sign in (SCIM's active; its sessions ended when it was set). */
    active: integer('active', { mode: 'boolean' }).notNull().default(true),
    /**
     * The folded name and email `q` searches (users/search-key.ts), indexed by the FTS5 table
     * users_search, which triggers keep in step (migration 0016).
     */
    searchKey: text('search_key').notNull().default(''),
  },
  (table) => [
    // The admins, found without reading every user (the last-admin rule counts them).
    index('users_admins_idx').on(table.id).where(sql`role = 'admin'`),
    // Usernames other than the email: a username that is the email (most users) is unique as
    // the email is, and leaving it out of this index spares every insert a second index write.
    uniqueIndex('users_username_key_unique')
      .on(table.usernameKey)
      .where(sql`username_key <> email_key`),
  ],
)

/**
 * Answers to POST requests sent with an Idempotency-Key, kept for 24 hours so a retry gets
 * the first answer back. `fingerprint` is an HMAC of the request body under the install
 * secret, so a body that held a password is not kept in a form that is cheap to reverse.
 */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    status: integer('status').notNull(),
    body: text('body').notNull(),
    location: text('location'),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.scope, table.key] }),
    index('idempotency_keys_created_at_idx').on(table.createdAt),
  ],
)

/** Install-wide values created once, such as the idempotency HMAC secret. */
export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  createdAt: text('created_at').notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
})

/**
 * Browser sessions (the `session` cookie). `id` is the SHA-256 of the cookie value, so the
 * database never holds a usable credential. Times are epoch milliseconds.
 */
export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (table) => [
    index('sessions_user_id_idx').on(table.userId),
    index('sessions_expires_at_idx').on(table.expiresAt),
  ],
)

/** Bearer access tokens from /login, stored as SHA-256 like sessions; they live one hour. */
export const accessTokens = sqliteTable(
  'access_tokens',
  {
    id: text('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (table) => [
    index('access_tokens_user_id_idx').on(table.userId),
    index('access_tokens_expires_at_idx').on(table.expiresAt),
  ],
)

/**
 * API keys. Only the SHA-256 of a key is stored; `prefix` (the first characters of the key)
 * lets people tell keys apart. A revoked key keeps its row, for the record.
 */
export const apiKeys = sqliteTable('api_keys', {
  id: integer('id').primaryKey({ autoIncrement: true }),
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
  /** Space-separated scopes (auth/access.ts); `*` is every scope, as keys were before scopes. */
  scopes: text('scopes').notNull().default('*'),
  /** ISO time after which the key is refused; null: it does not expire. */
  expiresAt: text('expires_at'),
})

/**
 * An upload: one request's files with their description and visibility. The owner is the
 * user or API key that sent credentials with it (none while /users is open and none were sent).
 */
export const uploads = sqliteTable(
  'uploads',
  {
    id: text('id').primaryKey(),
    description: text('description'),
    isPublic: integer('public', { mode: 'boolean' }).notNull(),
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

/**
 * A stored file. It lives on disk under its own id (uploads/<id>); the client's filename is
 * only metadata. `sha256` (hex) is computed while the file streams in, and is its ETag.
 */
export const files = sqliteTable(
  'files',
  {
    id: text('id').primaryKey(),
    uploadId: text('upload_id')
      .notNull()
      .references(() => uploads.id, { onDelete: 'cascade' }),
    field: text('field').notNull(),
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(),
    size: integer('size').notNull(),
    sha256: text('sha256').notNull(),
    position: integer('position').notNull(),
  },
  (table) => [index('files_upload_id_idx').on(table.uploadId)],
)

/**
 * The webhook inbox. A verified delivery is committed here before it is answered, and handled
 * afterwards. (scheme, event_id) is unique: a redelivery finds its row and is not handled again.
 * `next_attempt_at` (epoch ms) is when a pending or failed event is due; null once it is done
 * or has used up its attempts.
 */
export const webhookEvents = sqliteTable(
  'webhook_events',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    eventId: text('event_id').notNull(),
    scheme: text('scheme').notNull(),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    receivedAt: text('received_at').notNull(),
    processedAt: text('processed_at'),
    nextAttemptAt: integer('next_attempt_at'),
    /**
     * The SHA-256 of the signed body, for the `sha256=` scheme only (null for the others): its
     * signature covers no timestamp and its event id may come from an unsigned header, so a
     * captured delivery resent under a new delivery id is recognised by its bytes.
     */
    bodySha256: text('body_sha256'),
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
 * Groups of users (CONTRACT section 12; SCIM maps its Groups onto them). `name_key` is the
 * lower-cased name and carries the uniqueness rule, as `email_key` does for users; `version`
 * grows on every write, membership included, and is what the ETag is made from.
 */
export const groups = sqliteTable('groups', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  nameKey: text('name_key').notNull().unique('groups_name_key_unique'),
  description: text('description'),
  version: integer('version').notNull().default(1),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

/**
 * What SCIM (CONTRACT section 13) says of a user beyond roster's own record: one row per user
 * that an identity provider described, none for users made through /users (their SCIM view is
 * derived from the record). The primary email is the record's `email`; `other_emails` holds
 * the rest as SCIM sent them (a JSON array of value, type, display), `primary_email_type` the
 * primary's type. Deleting the user deletes its profile.
 */
export const userProfiles = sqliteTable(
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
export const groupProfiles = sqliteTable(
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

/** Who is in which group. Deleting a group or a user deletes its memberships, nothing else. */
export const groupMembers = sqliteTable(
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
    // A user's groups, in id order, from the index alone.
    index('group_members_user_idx').on(table.userId, table.groupId),
  ],
)

/**
 * Mail waiting to be sent, and what became of it (CONTRACT section 14). A message is written in
 * the unit of work of the change that causes it, so none is lost and none is made twice; the
 * worker sends what is due and records the outcome. `message_id` is the Message-ID header,
 * fixed when the message is written, so a receiver can tell a resend from a new message. Once
 * a message is sent its bodies are cleared (they carry single-use links).
 */
export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
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
    /** Set while the message waits for a first or a further attempt (epoch ms). */
    nextAttemptAt: integer('next_attempt_at'),
    /** Until when the worker that claimed the message may send it (epoch ms). */
    leaseUntil: integer('lease_until'),
  },
  (table) => [
    index('mail_outbox_due_idx').on(table.nextAttemptAt),
    index('mail_outbox_to_key_idx').on(table.toKey, table.createdAt),
    index('mail_outbox_client_ip_idx').on(table.clientIp, table.createdAt),
  ],
)

/**
 * The single-use tokens of the mail flows: only the SHA-256 of each is kept (and of a magic
 * link's 6-digit code, with its tries), so a copy of the database signs nobody in.
 */
export const accountTokens = sqliteTable(
  'account_tokens',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    flow: text('flow').notNull(),
    tokenHash: text('token_hash').notNull().unique('account_tokens_token_hash_unique'),
    codeHash: text('code_hash'),
    /** The address the token was sent to (an email change's new address). */
    email: text('email').notNull(),
    tries: integer('tries').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (table) => [
    index('account_tokens_user_idx').on(table.userId, table.flow),
    // The addresses held for an undo (section 17): looked up on every write of an address.
    index('account_tokens_undo_email_idx')
      .on(sql`lower(${table.email})`)
      .where(sql`flow = 'email-change-undo' AND used_at IS NULL`),
  ],
)

/**
 * The audit log (CONTRACT section 16): one row per change or sign-in, written in the change's
 * unit of work. `seq` is the order of commits (one writer), the feed's position and the list's
 * cursor. The retention purge walks `seq` from the oldest, so `at` needs no index of its own.
 *
 * Every write pays for this table, so it is kept cheap (bench/README, "Audit log"): `seq` is the
 * rowid without AUTOINCREMENT (no sqlite_sequence write per event; the purge never deletes the
 * newest event, so a seq is never handed out twice), and the index for "who changed this
 * user?" leads with the seq's block of 256: an event's entry goes beside the entries of the
 * events just before it (one page per commit) instead of into a random page of an index sorted
 * by target (one page per event, which doubled a PATCH's commit). A target's events are read
 * block by block, newest first (backends/sqlite/audit.ts).
 */
export const auditEvents = sqliteTable(
  'audit_events',
  {
    seq: integer('seq').primaryKey(),
    at: text('at').notNull(),
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    requestId: text('request_id'),
    ip: text('ip'),
    changes: text('changes'),
  },
  // "Who changed this user?": a target's events, newest first, block by block (see above).
  (table) => [
    index('audit_events_target_idx').on(
      sql`(seq >> 8)`,
      table.targetType,
      table.targetId,
      table.seq,
    ),
  ],
)

/**
 * Outbound webhooks (CONTRACT section 16): where audit events are sent. `events` is a JSON array
 * of actions, kinds (`user.*`) or `*`; `secret` signs deliveries (it must be readable to sign,
 * so it is kept as given, like a mail server's password); `previous_secret` signs beside it
 * until `previous_secret_expires_at` after a rotation. `starts_after` is the live feed's
 * position when the endpoint was made: it receives the events after it.
 */
export const webhookEndpoints = sqliteTable('webhook_endpoints', {
  id: integer('id').primaryKey({ autoIncrement: true }),
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
 * One event for one endpoint, queued by the dispatcher in feed order (so `id` order is the
 * order an endpoint receives its events in) and sent by the sender, oldest pending first per
 * endpoint. Times of attempts are epoch milliseconds; `payload` is the exact bytes signed.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: text('event_id').notNull(),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at'),
    leaseUntil: integer('lease_until'),
    firstAttemptAt: integer('first_attempt_at'),
    lastAttemptAt: integer('last_attempt_at'),
    deliveredAt: integer('delivered_at'),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    lastError: text('last_error'),
    durationMs: integer('duration_ms'),
    createdAt: text('created_at').notNull(),
  },
  (table) => [
    // Each event once per endpoint, however often the dispatcher runs.
    uniqueIndex('webhook_deliveries_endpoint_event_unique').on(table.endpointId, table.eventId),
    // An endpoint's delivery log, newest first.
    index('webhook_deliveries_endpoint_idx').on(table.endpointId, table.id),
    // An endpoint's oldest pending delivery: the next it is sent.
    index('webhook_deliveries_pending_idx')
      .on(table.endpointId, table.id)
      .where(sql`status = 'pending'`),
  ],
)

/** Where the dispatcher has reached in the live feed: one row, made by the first dispatch. */
export const webhookDispatch = sqliteTable('webhook_dispatch', {
  id: integer('id').primaryKey(),
  position: text('position').notNull(),
})

/**
 * Passkeys (CONTRACT section 15): one row per WebAuthn credential a user registered. The
 * credential id and public key are base64url text, as the browser's JSON carries them;
 * `counter` is the authenticator's signature counter, and `flagged_at` is set when a sign-in
 * presents a counter that did not grow (a cloned authenticator), after which it is refused.
 */
export const passkeys = sqliteTable(
  'passkeys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    credentialId: text('credential_id').notNull().unique('passkeys_credential_id_unique'),
    publicKey: text('public_key').notNull(),
    counter: integer('counter').notNull().default(0),
    transports: text('transports').notNull().default('[]'),
    name: text('name').notNull(),
    backedUp: integer('backed_up').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    flaggedAt: integer('flagged_at'),
  },
  (table) => [index('passkeys_user_idx').on(table.userId)],
)

/**
 * A user's TOTP secret (RFC 6238), unconfirmed until a first code proves the app has it.
 * `last_step` is the newest 30-second step whose code was accepted: a code is taken once.
 */
export const totpFactors = sqliteTable('totp_factors', {
  userId: integer('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  secret: text('secret').notNull(),
  createdAt: integer('created_at').notNull(),
  confirmedAt: integer('confirmed_at'),
  lastStep: integer('last_step').notNull().default(0),
})

/** Recovery codes: only their SHA-256 is kept; a used one keeps its row (used_at) until replaced. */
export const recoveryCodes = sqliteTable(
  'recovery_codes',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    usedAt: integer('used_at'),
  },
  (table) => [index('recovery_codes_user_idx').on(table.userId)],
)

/**
 * Short-lived sign-in ceremonies kept in the database so that any instance can finish what
 * another began: WebAuthn challenges (registration, sign-in) and the `mfa_token` between a
 * password and its second factor. Only the SHA-256 of the secret is kept; spent once.
 */
export const authChallenges = sqliteTable(
  'auth_challenges',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    hash: text('hash').notNull().unique('auth_challenges_hash_unique'),
    purpose: text('purpose').notNull(),
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    tries: integer('tries').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (table) => [
    index('auth_challenges_expires_idx').on(table.expiresAt),
    // A deleted user's challenges are found by this (cascade), not by a scan.
    index('auth_challenges_user_idx').on(table.userId),
  ],
)
