import type { SignedInUser } from './sessions'

/** How a caller proved who it is. */
export type Scheme = 'basic' | 'bearer' | 'session' | 'apiKey'

export const ANY_SCHEME: readonly Scheme[] = ['basic', 'bearer', 'session', 'apiKey']

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

/** A short, stable description of the caller, for scoping (idempotency keys, ownership). */
export function principalKey(principal: Principal | null): string {
  if (principal === null) return 'anonymous'
  return principal.kind === 'apiKey' ? `key:${principal.keyId}` : `user:${principal.userId}`
}
