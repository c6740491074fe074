import type { SignedInUser } from './sessions'

/** How a caller proved who it is. */
export type Scheme = 'basic' | 'bearer' | 'session' | 'apiKey'

export const ANY_SCHEME: readonly Scheme[] = ['basic', 'bearer', 'session', 'apiKey']

/** OpenAPI `security` for a route that takes any credential (the names of docs/routes.ts). */
export const ANY_CREDENTIAL_SECURITY: Record<string, string[]>[] = [
  { basic: [] },
  { bearer: [] },
  { session: [] },
  { apiKeyHeader: [] },
  { apiKeyQuery: [] },
]

/** Who is calling: a user (through one of the user schemes) or an API key. */
export type Principal =
  | {
      kind: 'user'
      userId: number
      scheme: 'basic' | 'bearer' | 'session'
      /** The presented token or session id (to revoke exactly it at logout). */
      secret?: string
      /** The user's row, when the credential lookup already read it. */
      user?: SignedInUser
    }
  | { kind: 'apiKey'; keyId: number; name: string }

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

/** A short, stable description of the caller, for scoping (idempotency keys, ownership). */
export function principalKey(principal: Principal | null): string {
  if (principal === null) return 'anonymous'
  return principal.kind === 'apiKey' ? `key:${principal.keyId}` : `user:${principal.userId}`
}
