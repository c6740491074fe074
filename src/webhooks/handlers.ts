import type { AuditSource } from '../audit/events'
import { isEmailAddress, isValidName } from '../users/fields'
import type { UserWrites } from '../users/store'
import type { InboxEvent } from './inbox'

/** What a handler reports; a thrown error marks the event failed (and it is retried). */
export type HandlerOutcome = 'processed' | 'ignored'

/** The stores a handler writes through: inside its event's unit of work. */
export interface HandlerStores {
  users: UserWrites
}

/**
 * Handlers run after the answer, each in its event's unit of work: what it writes commits
 * with the event's status, or not at all. It must await only `stores` (on SQLite the unit
 * holds the writer until it settles); a slow call elsewhere belongs in a job of its own.
 */
export type WebhookHandler = (
  event: ParsedEvent,
  stores: HandlerStores,
) => HandlerOutcome | Promise<HandlerOutcome>

export interface ParsedEvent extends InboxEvent {
  data: { object: Record<string, unknown> }
}

/**
 * The handlers roster knows: `user.*` and `customer.*` keep a user in step with another
 * system, matched by `data.object.email`. `*.created` and `*.updated` create the user or update
 * its name; `*.deleted` removes it, and is a no-op for an unknown email. An admin is never
 * changed or removed (CONTRACT section 17: that takes `*`, and a sender's event holds no scope
 * at all; the email comes from the sender's data): such an event is marked ignored. Other types
 * are stored and marked ignored by the worker.
 */
export function builtInHandlers(): Map<string, WebhookHandler> {
  const upsert: WebhookHandler = async (event, { users }) => {
    const { email, name } = userFields(event)
    const existing = await users.idByEmail(email)
    const by = sourceOf(event)
    if (existing === null) {
      const input = { name: name ?? email.split('@')[0] ?? email, email, passwordHash: null }
      await users.create(input, by)
      return 'processed' as const
    }
    if (name === null) return 'processed' as const
    return await unlessAdmin(() =>
      users.update(existing, { name }, { versions: null, refuseIfAdmin: () => AN_ADMIN }, by),
    )
  }
  const remove: WebhookHandler = async (event, { users }) => {
    const existing = await users.idByEmail(userFields(event).email)
    if (existing === null) return 'processed' as const
    return await unlessAdmin(() =>
      users.remove(existing, { versions: null, refuseIfAdmin: () => AN_ADMIN }, sourceOf(event)),
    )
  }
  const handlers = new Map<string, WebhookHandler>()
  for (const prefix of ['user', 'customer']) {
    handlers.set(`${prefix}.created`, upsert)
    handlers.set(`${prefix}.updated`, upsert)
    handlers.set(`${prefix}.deleted`, remove)
  }
  return handlers
}

/** Thrown by a write whose target is an admin (checked on the locked row, before any change). */
const AN_ADMIN = new Error('the user is an admin')

/** Runs a write of one user; an admin target makes the event ignored, not failed (no retries). */
async function unlessAdmin(write: () => Promise<unknown>): Promise<HandlerOutcome> {
  try {
    await write()
    return 'processed'
  } catch (error) {
    if (error === AN_ADMIN) return 'ignored'
    throw error
  }
}

/** A handler's changes are the sender's: the audit log names the event that made them. */
function sourceOf(event: ParsedEvent): AuditSource {
  return { actor: { type: 'webhook', id: event.eventId }, requestId: null, ip: null }
}

function userFields(event: ParsedEvent): { email: string; name: string | null } {
  const { email, name } = event.data.object
  if (!isEmailAddress(email)) {
    throw new Error('data.object.email is missing or is not an email address')
  }
  return { email, name: typeof name === 'string' && isValidName(name) ? name.trim() : null }
}
