import type { AuditSource } from '../audit/events'
import { fieldDetail } from '../errors/details'
import { AppError } from '../errors/errors'
import type { Principal } from './principal'
import type { CredentialStore, SignInMethod } from './sessions'

/**
 * The one door every way in passes (issue 52, point 4; PocketBase's `recordAuthResponse` is the
 * model): whether the account may sign in now, whether what was proved finishes the sign-in or
 * a second factor must follow, and issuing the session and the token; and the step-up a
 * signed-in account takes before changing how it signs in. /login, Basic, a magic link, a
 * passkey, a TOTP or recovery code, and the providers and authorisation server to come all go
 * through it, so a rule added here cannot be forgotten by one of them.
 */

/** Where a typed password came from: the client's address (the limiter's key) and its request. */
export interface Origin {
  ip: string
  requestId: string | null
}

/** How recent a sign-in must be to stand in for a password (CONTRACT section 15). */
export const STEP_UP_MS = 5 * 60 * 1000

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
  users: {
    get(id: number): Promise<U | null>
    /** The account's row with its password hash, for a step-up (null: no such user). */
    withPasswordHash(
      id: number,
    ): Promise<{ user: { email: string }; passwordHash: string | null } | null>
  }
  credentials: Pick<CredentialStore, 'issue' | 'signedInAt'>
  /** Checks a typed password under the login limiter (Authenticator.confirmPassword). */
  confirmPassword(
    account: { email: string; passwordHash: string },
    password: string,
    origin: Origin,
  ): Promise<boolean>
  /** Epoch milliseconds. */
  clock: () => number
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
  /**
   * Whether a user's credential comes from a sign-in within the last 5 minutes: its session's
   * or token's creation (a session's renewals do not move it). Basic carries no sign-in time,
   * and a key is no user: both answer false.
   */
  signedInRecently(principal: Principal): Promise<boolean>
  /**
   * The step-up of a change an account makes with its own credential (403
   * REAUTHENTICATION_REQUIRED otherwise), by `rule`:
   * - `password-first`, for its password or email (sections 11 and 17): its `current_password`
   *   when it has one, else a sign-in within 5 minutes. A stolen one-hour token moves nothing.
   * - `recent-or-password`, for its factors (section 15): a sign-in within 5 minutes, or its
   *   `current_password`.
   * A password is checked under the login limiter: a wrong one counts as a failed sign-in.
   */
  requireStepUp(
    principal: Principal & { kind: 'user' },
    currentPassword: string | undefined,
    originOf: () => Origin,
    rule: StepUpRule,
    /** The account's address and hash when the caller read them already; else the door reads them, only when needed. */
    account?: StepUpAccount,
  ): Promise<void>
}

export type StepUpRule = 'password-first' | 'recent-or-password'

/** What a step-up reads of the account: its address (the limiter's key) and its hash. */
export interface StepUpAccount {
  email: string
  passwordHash: string | null
}

export function createSignInDoor<U extends DoorAccount>(inputs: DoorInputs<U>): SignInDoor<U> {
  async function signedInRecently(principal: Principal): Promise<boolean> {
    if (principal.kind !== 'user' || principal.secret === undefined) return false
    if (principal.scheme === 'basic') return false
    const kind = principal.scheme === 'session' ? 'session' : 'access_token'
    const at = await inputs.credentials.signedInAt(kind, principal.secret)
    return at !== null && inputs.clock() - at <= STEP_UP_MS
  }

  /** Whether `given` is the account's password (false when it has none or none was given). */
  async function confirms(
    account: StepUpAccount | null,
    given: string | undefined,
    originOf: () => Origin,
  ): Promise<boolean> {
    if (account === null || account.passwordHash === null) return false
    if (given === undefined || given === '') return false
    const { email, passwordHash } = account
    return await inputs.confirmPassword({ email, passwordHash }, given, originOf())
  }

  return {
    signedInRecently,
    async requireStepUp(principal, currentPassword, originOf, rule, known) {
      const accountOf = async (): Promise<StepUpAccount | null> => {
        if (known !== undefined) return known
        const row = await inputs.users.withPasswordHash(principal.userId)
        return row === null ? null : { email: row.user.email, passwordHash: row.passwordHash }
      }
      const given = currentPassword !== undefined && currentPassword !== ''
      if (rule === 'recent-or-password') {
        if (await signedInRecently(principal)) return
        if (await confirms(await accountOf(), currentPassword, originOf)) return
        throw stepUpRequired(
          'Changing how this account signs in needs a sign-in within the last 5 minutes, or current_password',
          given
            ? 'does not match the account’s current password'
            : 'is required when the sign-in is older than 5 minutes',
        )
      }
      const account = await accountOf()
      if (account === null) throw new AppError('UNAUTHORIZED', 'This account no longer exists')
      if (account.passwordHash !== null) {
        if (!given) {
          throw credentialStepUp(
            'is required, with the account’s own credential, to change its password or email',
          )
        }
        if (await confirms(account, currentPassword, originOf)) return
        throw credentialStepUp('does not match the account’s current password', currentPassword)
      }
      // No password to confirm (passkeys or mailed links only): a sign-in within the last 5
      // minutes is the proof instead; otherwise, sign in again.
      if (await signedInRecently(principal)) return
      throw credentialStepUp(
        'is not set for this account: sign in again (within 5 minutes) to change its password or email',
      )
    },
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

function stepUpRequired(message: string, detail: string, received?: string): AppError {
  return new AppError('REAUTHENTICATION_REQUIRED', message, [
    fieldDetail('current_password', detail, received),
  ])
}

function credentialStepUp(detail: string, received?: string): AppError {
  return stepUpRequired(
    'Changing the password or email of this account needs its current password',
    detail,
    received,
  )
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
