import { covers, type Grant, type Role, type Scope } from './access'
import type { SignedInUser } from './sessions'

/** How a caller proved who it is. */
export type Scheme = 'basic' | 'bearer' | 'session' | 'apiKey'

export const ANY_SCHEME: readonly Scheme[] = ['basic', 'bearer', 'session', 'apiKey']

/** Who is calling: a user (through one of the user schemes) or an API key. */
export type Principal =
  | {
      kind: 'user'
      userId: number
      /** Read with the credential on every request, so a role change counts at once. */
      role: Role
      scheme: 'basic' | 'bearer' | 'session'
      /** The presented token or session id (to revoke exactly it at logout). */
      secret?: string
      /** The user's row as the credential's lookup read it (whole, groups too, for Basic). */
      user?: SignedInUser
    }
  | {
      kind: 'apiKey'
      keyId: number
      name: string
      scopes: readonly Grant[]
      /** When the key stops working; null: never (a key it makes expires no later). */
      expiresAt: string | null
      /** The admin whose credential made the key (or its first ancestor); null: none. */
      createdByUser: number | null
    }

/** A short, stable description of the caller, for scoping (idempotency keys, ownership). */
export function principalKey(principal: Principal | null): string {
  if (principal === null) return 'anonymous'
  return principal.kind === 'apiKey' ? `key:${principal.keyId}` : `user:${principal.userId}`
}

/** What the caller holds everywhere: a key its scopes, an admin every scope, a member none. */
export function grantsOf(principal: Principal | null): readonly Grant[] {
  if (principal === null) return []
  if (principal.kind === 'apiKey') return principal.scopes
  return principal.role === 'admin' ? ['*'] : []
}

/** Whether the caller holds `scope` (a key with it, or an admin). */
export function holds(principal: Principal | null, scope: Scope): boolean {
  return covers(grantsOf(principal), scope)
}

/** Whether the caller is this user itself (any of the user schemes). */
export function isUser(principal: Principal | null, userId: number): boolean {
  return principal?.kind === 'user' && principal.userId === userId
}
