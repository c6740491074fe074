import { fieldDetail } from '../errors/details'
import { AppError } from '../errors/errors'
import { beyond } from './access'
import type { RevocableKey } from './api-keys'
import { grantsOf, isUser, type Principal } from './principal'

/**
 * Authority never grows (CONTRACT section 17): no credential creates, changes or revokes a
 * credential or an account that holds more than it does. An admin holds every scope (`*`), so
 * granting or removing `admin`, and changing or deleting an admin's account, take `*`: a key
 * with `*`, or an admin's own session or token. `users:write` covers members only.
 */

/** Whether the caller holds every scope: a key with `*`, or an admin's session or token. */
export function holdsAll(principal: Principal | null): boolean {
  return grantsOf(principal).includes('*')
}

/**
 * FORBIDDEN for a caller without `*`, naming `*` as what is missing and saying why; the
 * detail's field is the one refused (`role`), else `scope`, and `received` what the caller holds.
 */
export function needsAll(why: string, principal: Principal | null, field = 'scope'): AppError {
  const held =
    principal?.kind === 'user' ? `role ${principal.role}` : grantsOf(principal).join(' ') || 'none'
  return new AppError('FORBIDDEN', `This operation needs the * scope: ${why}`, [
    fieldDetail(field, `* is required: ${why}`, held),
  ])
}

/** The refusal of a role change (making or unmaking an admin) for a caller without `*`. */
export function roleChangeRefusal(principal: Principal | null): AppError | undefined {
  if (holdsAll(principal)) return undefined
  return needsAll('only an admin or a key with * grants or removes admin', principal, 'role')
}

/**
 * What a write to account `targetId` is refused with if that account turns out to be an admin
 * (checked on the locked row by the write itself): nothing for a caller holding `*`, or for
 * the account's own credential (which answers for itself with current_password).
 */
export function adminTargetRefusal(
  principal: Principal | null,
  targetId: number,
): AppError | undefined {
  if (!coversMembersOnly(principal, targetId)) return undefined
  return needsAll('the account is an admin, and users:write covers members only', principal)
}

/** Whether a write by the caller to account `targetId` is refused should it be an admin's. */
export function coversMembersOnly(principal: Principal | null, targetId: number): boolean {
  return !holdsAll(principal) && !isUser(principal, targetId)
}

/**
 * What revoking `key` is refused with, if anything: the caller needs scopes that cover the
 * key's, or to be the key that made it (at any depth), or the admin whose credential made it.
 * A `keys:write`-only key cannot revoke a `*` key.
 */
export function keyRevocationRefusal(
  principal: Principal | null,
  key: RevocableKey,
): AppError | undefined {
  if (principal?.kind === 'user' && principal.userId === key.createdByUser) return undefined
  if (principal?.kind === 'apiKey' && key.ancestors.includes(principal.keyId)) return undefined
  const missing = beyond(key.scopes, grantsOf(principal))
  if (missing.length === 0) return undefined
  const held =
    principal?.kind === 'user' ? `role ${principal.role}` : grantsOf(principal).join(' ') || 'none'
  return new AppError(
    'FORBIDDEN',
    'Revoking a key needs scopes that cover its scopes, or to have made it',
    [fieldDetail('scope', `${missing.join(' ')} is required to revoke this key`, held)],
  )
}
