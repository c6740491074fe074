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

interface Carrier {
  [PRINCIPAL]?: Principal | null
}

/**
 * The principal authenticated for this request, kept on Elysia's per-request `set` object
 * (the auth hook runs before validation, where Elysia's `resolve` cannot add to the context).
 */
export function principalOf(set: object): Principal | null {
  return (set as Carrier)[PRINCIPAL] ?? null
}

export function setPrincipal(set: object, principal: Principal | null): void {
  ;(set as Carrier)[PRINCIPAL] = principal
}
