import type { Cookie } from 'elysia'
import type { AuditSource } from '../../audit/events'
import type { SignInDoor } from '../../auth/door'
import { ACCESS_TOKEN_TTL_MS, type SignInMethod } from '../../auth/sessions'
import { NO_STORE } from '../../http/credentials'
import { toView, type UserRecord } from '../../users/records'
import type { User } from '../users/schema'
import { sessionCookie, writeSessionCookie } from './cookies'
import { type CookieSecurity, isSecure } from './plugin'

/** What every way of signing in needs to answer like POST /login. */
export interface SignInAnswerInputs {
  /** Admits the account, decides the second factor and issues (auth/door.ts). */
  door: SignInDoor<UserRecord>
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
 * The one answer of a sign-in (CONTRACT sections 4 and 15), once the user proved who it is by
 * `method`: the door (auth/door.ts) admits the account (403 when deactivated or, with
 * --require-verified-email, unverified), then answers a session cookie, a bearer token and the
 * user's record; or, when the account has TOTP and what was proved is not a second factor,
 * `mfa_required` with an mfa_token and nothing else (no cookie, no token).
 */
export async function answerSignIn(
  inputs: SignInAnswerInputs,
  context: SignInContext,
  account: { id: number; secondFactor?: boolean },
  by: AuditSource,
  method: SignInMethod,
): Promise<SignedInAnswer | SecondStepAnswer> {
  context.set.headers['cache-control'] = NO_STORE
  const entered = await inputs.door.enter(account, method, by)
  if (entered.kind === 'second-step') return { mfa_required: true, mfa_token: entered.mfaToken }
  writeSessionCookie(
    sessionCookie(context.cookie),
    entered.sessionToken,
    isSecure(context.request, inputs.config),
  )
  return {
    user: toView(entered.user),
    access_token: entered.accessToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_MS / 1000,
  }
}
