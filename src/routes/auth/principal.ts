import type { Actor, AuditSource } from '../../audit/events'
import type { Principal } from '../../auth/principal'

/** OpenAPI `security` for a route that takes any credential (the names of docs/routes.ts). */
export const ANY_CREDENTIAL_SECURITY: Record<string, string[]>[] = [
  { basic: [] },
  { bearer: [] },
  { session: [] },
  { apiKeyHeader: [] },
  { apiKeyQuery: [] },
]

const PRINCIPAL = Symbol('roster.principal')
const CLIENT_IP = Symbol('roster.clientIp')

interface Carrier {
  [PRINCIPAL]?: Principal | null
  [CLIENT_IP]?: () => string
}

/**
 * The principal authenticated for this request, kept on Elysia's per-request `set` object
 * (the auth hook runs before validation, where Elysia's `resolve` cannot add to the context).
 */
export function principalOf(set: object): Principal | null {
  return (set as Carrier)[PRINCIPAL] ?? null
}

export function setPrincipal(
  set: object,
  principal: Principal | null,
  clientIp?: () => string,
): void {
  ;(set as Carrier)[PRINCIPAL] = principal
  if (clientIp !== undefined) (set as Carrier)[CLIENT_IP] = clientIp
}

/** Who the caller is in the audit log: a user, a key, or a user not signed in (no id). */
export function actorOf(principal: Principal | null): Actor {
  if (principal === null) return { type: 'user', id: null }
  return principal.kind === 'apiKey'
    ? { type: 'api_key', id: String(principal.keyId) }
    : { type: 'user', id: String(principal.userId) }
}

/**
 * The audit source of a request the auth hook saw: its principal, request id and client
 * address (read only when an event is written). `ip` is given by routes without the hook.
 */
export function auditSourceOf(set: { headers: object }, ip?: string): AuditSource {
  const carrier = set as Carrier
  return {
    actor: actorOf(carrier[PRINCIPAL] ?? null),
    requestId: requestIdOf(set),
    ip: ip ?? carrier[CLIENT_IP]?.() ?? null,
  }
}

/** The request's id, as the pipeline gave it (http/request-context.ts). */
export function requestIdOf(set: { headers: object }): string | null {
  const requestId = (set.headers as Record<string, unknown>)['x-request-id']
  return typeof requestId === 'string' ? requestId : null
}
