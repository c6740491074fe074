import type { Cookie } from 'elysia'
import type { AuditSource } from '../../audit/events'
import { ACCESS_TOKEN_TTL_MS, type CredentialStore, type SignInMethod } from '../../auth/sessions'
import { AppError } from '../../errors/errors'
import { NO_STORE } from '../../http/credentials'
import { toView } from '../../users/records'
import type { UserStore } from '../../users/store'
import type { User } from '../users/schema'
import { sessionCookie, writeSessionCookie } from './cookies'
import { type CookieSecurity, isSecure } from './plugin'

/** What every way of signing in needs to answer like POST /login. */
export interface SignInAnswerInputs {
  credentials: Pick<CredentialStore, 'issue'>
  users: Pick<UserStore, 'get'>
  /** Starts the second step of an account with TOTP: its mfa_token. */
  startSecondStep(userId: number): Promise<string>
  config: CookieSecurity
}

export interface SignInContext {
  request: Request
  cookie: Record<string, Cookie<unknown>>
  set: { headers: Record<string, unknown> }
}

/** What /login (and every other sign-in) answers once the user proved who it is. */
export interface SignedInAnswer {
  user: User
  access_token: string
  token_type: 'Bearer'
  expires_in: number
}

/** A right password (or link) of an account with TOTP: the code is still to come. */
export interface SecondStepAnswer {
  mfa_required: true
  mfa_token: string
}

/**
 * The one answer of a sign-in (CONTRACT sections 4 and 15): a session cookie, a bearer token
 * and the user's record; or, when the account has TOTP and what was proved is not a second
 * factor, `mfa_required` with an mfa_token and nothing else (no cookie, no token).
 */
export async function answerSignIn(
  inputs: SignInAnswerInputs,
  context: SignInContext,
  user: { id: number; secondFactor: boolean },
  by: AuditSource,
  method: SignInMethod,
): Promise<SignedInAnswer | SecondStepAnswer> {
  context.set.headers['cache-control'] = NO_STORE
  if (user.secondFactor) {
    return { mfa_required: true, mfa_token: await inputs.startSecondStep(user.id) }
  }
  const issued = await inputs.credentials.issue(user.id, by, method)
  writeSessionCookie(
    sessionCookie(context.cookie),
    issued.sessionToken,
    isSecure(context.request, inputs.config),
  )
  const record = await inputs.users.get(user.id)
  if (record === null) throw new AppError('UNAUTHORIZED', 'This account no longer exists')
  return {
    user: toView(record),
    access_token: issued.accessToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_MS / 1000,
  }
}
