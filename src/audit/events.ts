/**
 * The audit log's events (CONTRACT section 16): who did what to which record, through which
 * request, and which fields changed. Written in the same unit of work as the change, so a crash
 * keeps both or neither.
 */

/** Who may cause an event. */
export const ACTOR_TYPES = ['user', 'api_key', 'scim', 'cli', 'webhook', 'system'] as const
export type ActorType = (typeof ACTOR_TYPES)[number]

/** Ids are strings: targets of different kinds have ids of different shapes (5, `upl_…`). */
export interface Actor {
  type: ActorType
  id: string | null
}

/**
 * Every action roster records (`<target type>.<past tense>`), for the outbound webhooks'
 * subscriptions and the API document. test/audit/actions.test.ts fails when the code records
 * an action this list lacks.
 */
export const AUDIT_ACTIONS = [
  'user.created',
  'user.updated',
  'user.deleted',
  'group.created',
  'group.updated',
  'group.deleted',
  'group.member_added',
  'group.member_removed',
  'api_key.created',
  'api_key.revoked',
  'upload.created',
  'upload.deleted',
  'session.created',
  'session.revoked',
  'access_token.revoked',
  'login.failed',
  'login.locked',
  'passkey.created',
  'passkey.deleted',
  'passkey.flagged',
  'totp.enabled',
  'totp.disabled',
  'recovery_codes.generated',
  'factors.removed',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.disabled',
  'webhook_delivery.retried',
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

/** The kinds of action (`user` of `user.created`), each once, in the list's order. */
export const ACTION_KINDS: readonly string[] = [
  ...new Set(AUDIT_ACTIONS.map((action) => action.slice(0, action.indexOf('.')))),
]

/** Who caused a change and through which request: every event carries it. */
export interface AuditSource {
  actor: Actor
  requestId: string | null
  ip: string | null
}

/** The housekeeping and other work no caller asked for. */
export const SYSTEM: AuditSource = {
  actor: { type: 'system', id: null },
  requestId: null,
  ip: null,
}

/** A command of the CLI, run by `who` (the operating system's user name, when known). */
export function commandLine(who: string | null): AuditSource {
  return { actor: { type: 'cli', id: who }, requestId: null, ip: null }
}

/** A field's value before and after; a secret field shows only that it changed. */
export type Change = { before: unknown; after: unknown } | { changed: true }
export type Changes = Record<string, Change>

export interface AuditTarget {
  type: string
  id: string | null
}

/** What a domain says happened; the log adds when, and the source adds who. */
export interface NewAuditEvent {
  /** `<target type>.<past tense>`: `user.created`, `login.failed`, … */
  action: string
  target: AuditTarget
  changes?: Changes | null
}

/** An event as `GET /audit`, the feed and the CLI show it. */
export interface AuditEvent {
  id: string
  at: string
  actor: Actor
  action: string
  target: AuditTarget
  request_id: string | null
  ip: string | null
  changes: Changes | null
}

/** An event as a database stores it. */
export interface AuditRow {
  seq: number
  at: string
  actor_type: string
  actor_id: string | null
  action: string
  target_type: string
  target_id: string | null
  request_id: string | null
  ip: string | null
  /** JSON text, or null. */
  changes: string | null
}

export type NewAuditRow = Omit<AuditRow, 'seq'>

const EVENT_ID_PREFIX = 'evt_'

export function eventOfRow(row: AuditRow): AuditEvent {
  return {
    id: `${EVENT_ID_PREFIX}${row.seq}`,
    at: row.at,
    actor: { type: row.actor_type as ActorType, id: row.actor_id },
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    request_id: row.request_id,
    ip: row.ip,
    changes: row.changes === null ? null : (JSON.parse(row.changes) as Changes),
  }
}

/** The longest id an event keeps (a failed sign-in's target is the address as typed). */
const MAX_ID_LENGTH = 320

// C0 and C1 controls and DEL.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\x00-\x1f\x7f-\x9f]/g

/**
 * An id as the log keeps it: a caller's text (the address a failed sign-in typed) may hold
 * anything, so control characters are written as `\uXXXX` (PostgreSQL's text cannot hold U+0000,
 * and a reader's terminal should not act on them) and it is cut to MAX_ID_LENGTH.
 */
function idText(id: string | null): string | null {
  if (id === null) return null
  const shown = id.replace(
    CONTROL,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
  return shown.length > MAX_ID_LENGTH ? shown.slice(0, MAX_ID_LENGTH) : shown
}

/** The row an event is stored as, at `at`. */
export function rowOfEvent(source: AuditSource, event: NewAuditEvent, at: string): NewAuditRow {
  const changes = event.changes ?? null
  return {
    at,
    actor_type: source.actor.type,
    actor_id: idText(source.actor.id),
    action: event.action,
    target_type: event.target.type,
    target_id: idText(event.target.id),
    request_id: source.requestId,
    ip: source.ip,
    changes: changes === null || Object.keys(changes).length === 0 ? null : JSON.stringify(changes),
  }
}

/**
 * The fields of `after` whose value differs from `before`'s, each as `{ before, after }`. Only
 * the fields named are compared, so a record's secrets are never read into an event.
 */
export function changedFields<T extends object>(
  before: T | null,
  after: T | null,
  fields: readonly (keyof T & string)[],
): Changes {
  const changes: Changes = {}
  for (const field of fields) {
    const was = before === null ? null : (before[field] ?? null)
    const is = after === null ? null : (after[field] ?? null)
    if (!sameValue(was, is)) changes[field] = { before: was, after: is }
  }
  return changes
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((value, index) => value === b[index])
  }
  return a === b
}

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/

/**
 * An ISO 8601 instant with its offset (`2026-11-25T10:00:00Z`, `…+01:00`) as events store
 * times (UTC, milliseconds), so that a filter compares like with like; null for anything else.
 */
export function parseInstant(text: string): string | null {
  const at = INSTANT.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(at) ? null : new Date(at).toISOString()
}

/** The seq of an event id (`evt_42` → 42); null when the text is not one. */
export function seqOfEventId(id: string): number | null {
  if (!id.startsWith(EVENT_ID_PREFIX)) return null
  const digits = id.slice(EVENT_ID_PREFIX.length)
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return null
  const seq = Number(digits)
  return Number.isSafeInteger(seq) ? seq : null
}
