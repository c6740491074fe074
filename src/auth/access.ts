/**
 * Who may do what (CONTRACT section 12), as rules over plain values: a user's role, an API key's
 * scopes. The routes say which scope each operation needs (routes/authorisation.ts); this file
 * says who holds it.
 */

export const ROLES = ['member', 'admin'] as const
export type Role = (typeof ROLES)[number]

/** Every scope a key may hold, in the contract's order. */
export const SCOPES = [
  'users:read',
  'users:write',
  'uploads:read',
  'uploads:write',
  'webhooks:read',
  'webhooks:write',
  'keys:write',
  'metrics:read',
  'scim',
  'audit:read',
] as const
export type Scope = (typeof SCOPES)[number]

/** What a key is given: scopes, or `*` for all of them (today's keys, and the CLI's default). */
export type Grant = Scope | '*'

export const ALL_SCOPES: readonly Grant[] = Object.freeze(['*'])

export function isRole(value: unknown): value is Role {
  return value === 'member' || value === 'admin'
}

export function isGrant(value: string): value is Grant {
  return value === '*' || (SCOPES as readonly string[]).includes(value)
}

/**
 * Whether `grants` cover `scope`. `resource:write` covers `resource:read`, as a key that may
 * change users may read them (Stripe's restricted keys read the same way).
 */
export function covers(grants: readonly Grant[], scope: Grant): boolean {
  if (grants.includes('*') || grants.includes(scope)) return true
  if (scope === '*' || !scope.endsWith(':read')) return false
  return grants.includes(scope.replace(/:read$/, ':write') as Scope)
}

/** The grants as stored: space-separated, in the contract's order, without repeats. */
export function grantsText(grants: readonly Grant[]): string {
  if (grants.includes('*')) return '*'
  return SCOPES.filter((scope) => grants.includes(scope)).join(' ')
}

/** The stored text back as grants (unknown words are dropped: they grant nothing). */
export function grantsOf(text: string): Grant[] {
  return text.split(' ').filter(isGrant)
}

/**
 * The scopes of `requested` that `held` does not cover: a key made through the API gets at most
 * its creator's scopes, so asking for one more is refused (naming it) rather than trimmed.
 */
export function beyond(requested: readonly Grant[], held: readonly Grant[]): Grant[] {
  if (held.includes('*')) return []
  if (requested.includes('*')) return ['*']
  return requested.filter((scope) => scope !== '*' && !covers(held, scope))
}

/** The words of a scope list that are not scopes (to refuse them, naming each). */
export function unknownGrants(words: readonly string[]): string[] {
  return words.filter((word) => !isGrant(word))
}

/** How the scopes are listed in help and errors. */
export const SCOPE_LIST = `${SCOPES.join(', ')} or *`
