import { type Origin, unauthorized } from '../auth/authenticator'
import { ANY_SCHEME, holds, isUser, type Principal } from '../auth/principal'
import { fieldDetail } from '../errors/details'
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
  /**
   * Whether the caller's own credential comes from a sign-in within the last 5 minutes (the
   * step-up rule of CONTRACT section 15): that stands in for `current_password`.
   */
  signedInRecently(principal: Principal): Promise<boolean>
  /** Checks a typed password under the login limiter (see Authenticator.confirmPassword). */
  confirmPassword(
    account: { email: string; passwordHash: string },
    password: string,
    origin: Origin,
  ): Promise<boolean>
}

/**
 * Who may change the password or email of an account that can sign in (CONTRACT.md section
 * 11): an API key with users:write or an admin, or the account's own credential with the
 * step-up of requireReauthentication. Anyone else may set them only on an account that cannot
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
  if (principal !== null && isUser(principal, targetId)) {
    const account = { email: target.user.email, passwordHash }
    await requireReauthentication(principal, account, change.currentPassword, originOf, deps)
    return {}
  }
  const refusal = principal === null ? anonymousRefusal() : othersRefusal()
  if (passwordHash !== null) throw refusal
  return { refuseIfCanSignIn: refusal }
}

/**
 * The step-up of a change the account makes with its own credential to how it signs in or
 * where its mail goes (CONTRACT sections 11, 15 and 17): its `current_password` in the same
 * body when it has a password (checked under the login limiter, so a wrong one counts as a
 * failed sign-in), else a sign-in within the last 5 minutes. 403 REAUTHENTICATION_REQUIRED
 * otherwise. The one rule for PUT and PATCH /users/{id} {password, email} and for POST
 * /auth/email-change/request: a stolen one-hour token alone moves nothing.
 *
 * An account without a password asks for a recent sign-in whether or not it has a passkey: a
 * caller signed in as it proves it signs in somehow (a mailed link, at least), and a stolen
 * token must not move it to the thief's address, from which the thief would sign in.
 */
export async function requireReauthentication(
  principal: Principal,
  account: { email: string; passwordHash: string | null },
  currentPassword: string | undefined,
  originOf: () => Origin,
  deps: Pick<CredentialChangeDeps, 'signedInRecently' | 'confirmPassword'>,
): Promise<void> {
  const { passwordHash } = account
  if (passwordHash !== null) {
    if (currentPassword === undefined || currentPassword === '') {
      throw reauthenticationRequired(
        'is required, with the account’s own credential, to change its password or email',
      )
    }
    const confirmed = { email: account.email, passwordHash }
    if (!(await deps.confirmPassword(confirmed, currentPassword, originOf()))) {
      throw reauthenticationRequired(
        'does not match the account’s current password',
        currentPassword,
      )
    }
    return
  }
  // No password to confirm (passkeys or mailed links only): a sign-in within the last 5
  // minutes is the proof instead (the step-up rule of section 15); otherwise, sign in again.
  if (await deps.signedInRecently(principal)) return
  throw reauthenticationRequired(
    'is not set for this account: sign in again (within 5 minutes) to change its password or email',
  )
}

function reauthenticationRequired(message: string, received?: string): AppError {
  return new AppError(
    'REAUTHENTICATION_REQUIRED',
    'Changing the password or email of this account needs its current password',
    [fieldDetail('current_password', message, received)],
  )
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
