import type { AuditSource } from '../audit/events'
import { AppError } from '../errors/errors'
import type { CredentialStore, SignInMethod } from './sessions'

/**
 * The one door every way in passes (issue 52, point 4; PocketBase's `recordAuthResponse` is the
 * model): whether the account may sign in now, whether what was proved finishes the sign-in or
 * a second factor must follow, and issuing the session and the token. /login, Basic, a magic
 * link, a passkey, a TOTP or recovery code, an invitation, and the providers and authorisation
 * server to come all go through it, so a rule added here cannot be forgotten by one of them.
 */

/** What decides whether an account may sign in. */
export interface Admissible {
  /** False: deactivated (SCIM's active, PATCH { active: false }). */
  active: boolean
  /** Whether its address is verified (asked for with --require-verified-email). */
  verified: boolean
}

/**
 * Whether an account may sign in now: it is active, and its address is verified when the
 * server requires it. Throws the refusal (403), said only once the proof was right, so it tells
 * nothing to one who does not hold the account's credential.
 */
export function admit(account: Admissible, requireVerifiedEmail: boolean): void {
  if (!account.active) throw accountDeactivated()
  if (requireVerifiedEmail && !account.verified) throw emailNotVerified()
}

/** A record as the door reads it: the account, its verification as `verified`. */
export function admissibleOf(user: { active: boolean; email_verified_at: string | null }) {
  return { active: user.active, verified: user.email_verified_at !== null }
}

/** What each proof is worth: these finish a sign-in by themselves (two factors in one). */
const FINISHING: ReadonlySet<SignInMethod> = new Set(['passkey', 'totp', 'recovery_code'])

/** An account as the door reads it (the users feature's record; auth does not import it). */
export interface DoorAccount {
  id: number
  active: boolean
  email_verified_at: string | null
}

/** What came out of the door: the second step to take, or a signed-in user. */
export type Entered<U extends DoorAccount> =
  | { kind: 'second-step'; mfaToken: string }
  | { kind: 'signed-in'; user: U; accessToken: string; sessionToken: string }

export interface DoorInputs<U extends DoorAccount> {
  requireVerifiedEmail: boolean
  users: { get(id: number): Promise<U | null> }
  credentials: Pick<CredentialStore, 'issue'>
  factors: {
    hasSecondFactor(userId: number): Promise<boolean>
    startSecondStep(userId: number): Promise<string>
  }
}

export interface SignInDoor<U extends DoorAccount> {
  /**
   * One sign-in, once the user proved who it is by `method`: the account is read and admitted,
   * a password or a link of an account with TOTP earns an mfa_token instead of a session, and
   * otherwise a session and a token are issued (with the sign-in's audit event). `secondFactor`
   * may be given when the proof's own read already knows it (the password's lookup does).
   */
  enter(
    account: { id: number; secondFactor?: boolean },
    method: SignInMethod,
    by: AuditSource,
  ): Promise<Entered<U>>
}

export function createSignInDoor<U extends DoorAccount>(inputs: DoorInputs<U>): SignInDoor<U> {
  return {
    async enter(account, method, by) {
      const user = await inputs.users.get(account.id)
      if (user === null) throw new AppError('INVALID_CREDENTIALS', 'This account is gone')
      admit(admissibleOf(user), inputs.requireVerifiedEmail)
      if (!FINISHING.has(method)) {
        const secondFactor =
          account.secondFactor ?? (await inputs.factors.hasSecondFactor(account.id))
        if (secondFactor) {
          return { kind: 'second-step', mfaToken: await inputs.factors.startSecondStep(user.id) }
        }
      }
      const issued = await inputs.credentials.issue(user.id, by, method)
      return {
        kind: 'signed-in',
        user,
        accessToken: issued.accessToken,
        sessionToken: issued.sessionToken,
      }
    },
  }
}

/**
 * The account is deactivated (SCIM's active false, or PATCH /users/{id} { active: false }): its
 * password or link is right, and it still may not sign in.
 */
export function accountDeactivated(): AppError {
  return new AppError('FORBIDDEN', 'This account is deactivated; an administrator can restore it')
}

/** --require-verified-email: the password is right, the address not verified yet. */
export function emailNotVerified(): AppError {
  return new AppError(
    'EMAIL_NOT_VERIFIED',
    'Verify the account’s email address first: POST /auth/verify-email/request sends the link',
  )
}
