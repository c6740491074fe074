import { type Origin, unauthorized } from '../auth/authenticator'
import type { DoorAccount, SignInDoor } from '../auth/door'
import { ANY_SCHEME, holds, isUser, type Principal } from '../auth/principal'
import { AppError, notFound } from '../errors/errors'
import type { WriteGuard } from './records'
import type { UserStore } from './store'

/** What a PUT or PATCH asks to change about how the account signs in. */
export interface CredentialChange {
  password?: string
  email?: string
  /** `current_password` from the same body. */
  currentPassword?: string
}

export interface CredentialChangeDeps {
  users: Pick<UserStore, 'withPasswordHash'>
  /** The door's step-up (auth/door.ts), asked with its `password-first` rule. */
  door: Pick<SignInDoor<DoorAccount>, 'requireStepUp'>
}

/**
 * Who may change the password or email of an account that can sign in (CONTRACT.md section
 * 11): an API key with users:write or an admin, or the account's own credential with the
 * door's `password-first` step-up (its current password, or for an account without one a
 * sign-in within 5 minutes; auth/door.ts). Anyone else may set them only on an account that cannot
 * sign in yet, and the write checks that again on the locked row (the guard returned here).
 * Anonymous callers get 401, other users 403, the account itself without its proof 403
 * REAUTHENTICATION_REQUIRED.
 */
export async function authorizeCredentialChange(
  principal: Principal | null,
  targetId: number,
  change: CredentialChange,
  originOf: () => Origin,
  deps: CredentialChangeDeps,
): Promise<Pick<WriteGuard, 'refuseIfCanSignIn'>> {
  if (change.password === undefined && change.email === undefined) return {}
  // A key with users:write, or an admin on another account; on its own, an admin is the
  // account itself (its current password is asked for, as of anyone).
  if (holds(principal, 'users:write') && !isUser(principal, targetId)) return {}
  const target = await deps.users.withPasswordHash(targetId)
  if (target === null) throw notFound('No user with this id')
  const emailChanges = change.email !== undefined && change.email !== target.user.email
  if (change.password === undefined && !emailChanges) return {}
  const { passwordHash } = target
  if (principal?.kind === 'user' && principal.userId === targetId) {
    const account = { email: target.user.email, passwordHash }
    await deps.door.requireStepUp(
      principal,
      change.currentPassword,
      originOf,
      'password-first',
      account,
    )
    return {}
  }
  const refusal = principal === null ? anonymousRefusal() : othersRefusal()
  if (passwordHash !== null) throw refusal
  return { refuseIfCanSignIn: refusal }
}

function anonymousRefusal(): AppError {
  return unauthorized(
    ANY_SCHEME,
    'This account can sign in: changing its password or email needs its own credential with current_password, an admin’s, or an API key with users:write',
  )
}

function othersRefusal(): AppError {
  return new AppError(
    'FORBIDDEN',
    'Only the account itself (with current_password), an admin or an API key with users:write may change its password or email',
  )
}
