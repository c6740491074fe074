import { ACTION_KINDS, AUDIT_ACTIONS } from '../audit/events'
import type { FeedPosition } from '../audit/log'
import { fieldDetail } from '../errors/details'
import { type ErrorDetail, notFound, preconditionFailed, validationFailed } from '../errors/errors'
import { hasDeceptiveCharacter } from '../text'

/**
 * Outbound webhooks (CONTRACT section 16): an endpoint is a URL that receives, signed, the audit
 * events whose action it subscribes to. Its secret signs every delivery (Standard Webhooks) and
 * is shown once; a rotation keeps the old one signing for a while beside the new.
 */

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number]

/** An endpoint as every answer shows it (never its secret). */
export interface WebhookEndpoint {
  id: number
  url: string
  description: string | null
  /** Actions (`user.created`), kinds (`user.*`) or everything (`*`). */
  events: string[]
  status: EndpointStatus
  /** Why it is disabled (roster's words when it disabled it after failures); null when enabled. */
  disabled_reason: string | null
  /** Until when the secret before the last rotation still signs beside the current one. */
  previous_secret_expires_at: string | null
  created_at: string
  updated_at: string
}

/** An endpoint as stored: the view, its version (ETag), secrets and where its feed starts. */
export interface EndpointRecord extends WebhookEndpoint {
  version: number
  secret: string
  previous_secret: string | null
  /** The live feed's position when it was made: it receives the events after it. */
  starts_after: FeedPosition
}

export interface NewEndpoint {
  url: string
  description: string | null
  events: string[]
}

export interface EndpointChanges {
  url?: string
  /** null clears it; undefined leaves it. */
  description?: string | null
  events?: string[]
  status?: EndpointStatus
  disabled_reason?: string | null
  secret?: string
  previous_secret?: string | null
  previous_secret_expires_at?: string | null
  starts_after?: FeedPosition
}

export interface EndpointGuard {
  /** The versions the caller accepts (from If-Match); null when any will do. */
  versions: readonly number[] | null
}

/** The most endpoints one roster keeps: each is a copy of the log on every write. */
export const MAX_ENDPOINTS = 100
export const MAX_URL_LENGTH = 2048
export const MAX_EVENT_PATTERNS = 64
export const MAX_ENDPOINT_DESCRIPTION = 500

/** The ways an endpoint may name what it receives: everything, a kind, or an action. */
export function isEventPattern(pattern: string): boolean {
  if (pattern === '*') return true
  if (pattern.endsWith('.*'))
    return (ACTION_KINDS as readonly string[]).includes(pattern.slice(0, -2))
  return (AUDIT_ACTIONS as readonly string[]).includes(pattern)
}

/** Whether an endpoint subscribed to `patterns` receives `action`. */
export function subscribes(patterns: readonly string[], action: string): boolean {
  return patterns.some(
    (pattern) =>
      pattern === '*' ||
      pattern === action ||
      (pattern.endsWith('.*') && action.startsWith(pattern.slice(0, -1))),
  )
}

/**
 * The problems of an endpoint's URL, as error details: http or https, a host, no user name or
 * password in it (they would travel in every delivery's request line and logs), no fragment,
 * at most MAX_URL_LENGTH characters. Where it points is checked apart (the addresses).
 */
export function urlProblems(text: string): ErrorDetail[] {
  const problem = (message: string) => [fieldDetail('url', message, text)]
  if (text.length > MAX_URL_LENGTH) return problem(`must be at most ${MAX_URL_LENGTH} characters`)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
  if (!text.isWellFormed() || hasDeceptiveCharacter(text) || /[\s\x00-\x1f\x7f]/.test(text)) {
    return problem('must be a URL without spaces, control or invisible characters')
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return problem('must be an absolute http:// or https:// URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return problem('must be an absolute http:// or https:// URL')
  }
  if (url.hostname === '') return problem('must name a host')
  if (url.username !== '' || url.password !== '') {
    return problem('must not carry a user name or password (the signature authenticates roster)')
  }
  if (url.hash !== '') return problem('must not have a #fragment')
  return []
}

/** The problems of an endpoint's event list, as error details. */
export function eventsProblems(events: readonly string[]): ErrorDetail[] {
  if (events.length === 0) {
    return [fieldDetail('events', 'must name at least one action, kind (user.*) or *', '[]')]
  }
  if (events.length > MAX_EVENT_PATTERNS) {
    return [fieldDetail('events', `must name at most ${MAX_EVENT_PATTERNS}`, String(events.length))]
  }
  return events.flatMap((pattern, index) =>
    isEventPattern(pattern)
      ? []
      : [
          fieldDetail(
            `events[${index}]`,
            'is not an action roster records, a kind of them (user.*) or * (the API document lists them)',
            pattern,
          ),
        ],
  )
}

/** Each pattern once, in the order given. */
export function distinctEvents(events: readonly string[]): string[] {
  return [...new Set(events)]
}

export function checkEndpointInput(input: { url?: string; events?: readonly string[] }): void {
  const problems = [
    ...(input.url === undefined ? [] : urlProblems(input.url)),
    ...(input.events === undefined ? [] : eventsProblems(input.events)),
  ]
  if (problems.length > 0) throw validationFailed(problems)
}

export function toEndpointView(record: EndpointRecord): WebhookEndpoint {
  return {
    id: record.id,
    url: record.url,
    description: record.description,
    events: record.events,
    status: record.status,
    disabled_reason: record.disabled_reason,
    previous_secret_expires_at: record.previous_secret_expires_at,
    created_at: record.created_at,
    updated_at: record.updated_at,
  }
}

/** Checks the stored endpoint (locked by the write) against a guard. */
export function checkEndpointGuard(
  current: EndpointRecord | null,
  guard: EndpointGuard,
): EndpointRecord {
  if (current === null) throw notFound('No webhook endpoint with this id')
  if (guard.versions !== null && !guard.versions.includes(current.version)) {
    throw preconditionFailed()
  }
  return current
}

/** 24 random bytes as a Standard Webhooks secret (`whsec_` and base64), as Svix makes them. */
export function newEndpointSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64')}`
}

/**
 * The secrets that sign a delivery made at `now` (ISO 8601): the current one, and the one before
 * the last rotation while it has not expired.
 */
export function signingSecrets(endpoint: SecretsOf, now: string): string[] {
  const previous =
    endpoint.previous_secret !== null &&
    endpoint.previous_secret_expires_at !== null &&
    endpoint.previous_secret_expires_at > now
      ? [endpoint.previous_secret]
      : []
  return [endpoint.secret, ...previous]
}

export type SecretsOf = Pick<
  EndpointRecord,
  'secret' | 'previous_secret' | 'previous_secret_expires_at'
>
