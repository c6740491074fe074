import { Value } from '@sinclair/typebox/value'
import { EmailFormat, isValidName } from '../users/schema'
import type { UserService } from '../users/service'
import type { InboxEvent } from './inbox'

/** What a handler reports; a thrown error marks the event failed (and it is retried). */
export type HandlerOutcome = 'processed' | 'ignored'

/** Handlers run after the answer. A synchronous one commits with the event's status. */
export type WebhookHandler = (event: ParsedEvent) => HandlerOutcome | Promise<HandlerOutcome>

export interface ParsedEvent extends InboxEvent {
  data: { object: Record<string, unknown> }
}

/**
 * The handlers roster knows: `user.*` and `customer.*` keep a user in step with another
 * system, matched by `data.object.email`. `*.created` and `*.updated` create the user or update
 * its name; `*.deleted` removes it, and is a no-op for an unknown email. Other types are
 * stored and marked ignored by the worker.
 */
export function builtInHandlers(service: UserService): Map<string, WebhookHandler> {
  // Synchronous handlers run inside the worker's write: they use the in-write functions.
  const users = service.inWrite
  const upsert: WebhookHandler = (event) => {
    const { email, name } = userFields(event)
    const existing = users.idByEmail(email)
    if (existing === null)
      users.create({ name: name ?? email.split('@')[0] ?? email, email, passwordHash: null })
    else if (name !== null) users.update(existing, { name }, { versions: null })
    return 'processed'
  }
  const remove: WebhookHandler = (event) => {
    const existing = users.idByEmail(userFields(event).email)
    if (existing !== null) users.remove(existing, { versions: null })
    return 'processed'
  }
  const handlers = new Map<string, WebhookHandler>()
  for (const prefix of ['user', 'customer']) {
    handlers.set(`${prefix}.created`, upsert)
    handlers.set(`${prefix}.updated`, upsert)
    handlers.set(`${prefix}.deleted`, remove)
  }
  return handlers
}

function userFields(event: ParsedEvent): { email: string; name: string | null } {
  const { email, name } = event.data.object
  if (typeof email !== 'string' || !Value.Check(EmailFormat, email)) {
    throw new Error('data.object.email is missing or is not an email address')
  }
  return { email, name: typeof name === 'string' && isValidName(name) ? name.trim() : null }
}
