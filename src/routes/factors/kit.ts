import type { Authenticator } from '../../auth/authenticator'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { AppError, notFound } from '../../errors/errors'
import type { SecondFactors } from '../../factors/service'
import { clientIp } from '../../http/client'
import { errorResponses } from '../../http/openapi-schemas'
import type { UserStore } from '../../users/store'
import type { AuthPlugin, CookieSecurity } from '../auth/plugin'
import { principalOf, requestIdOf } from '../auth/principal'
import type { SignInAnswerInputs } from '../auth/sign-in'
import { guardOf } from '../authorisation'

/** What the factor routes are given by the composition root. */
export interface FactorRouteInputs {
  auth: AuthPlugin
  factors: SecondFactors
  users: Pick<UserStore, 'get' | 'withPasswordHash'>
  authenticator: Pick<Authenticator, 'underLimit'>
  signIn: SignInAnswerInputs
  config: CookieSecurity & Pick<Config, 'usersAccess'>
}

export type Context = {
  request: Request
  server: Bun.Server<unknown> | null
  set: { headers: object }
}

export const tags = ['second factors']

/** The helpers every factor route shares: guards, the caller, the step-up rule. */
export function factorKit(inputs: FactorRouteInputs) {
  const { users, config } = inputs
  const origin = ({ request, server, set }: Context) => ({
    ip: clientIp(request, server, config.trustProxy),
    requestId: requestIdOf(set),
  })

  /** The signed-in caller (these routes take only a user's own bearer token or session). */
  const callerOf = async (set: object) => {
    const principal = principalOf(set)
    if (principal?.kind !== 'user') throw new AppError('UNAUTHORIZED', 'Sign in first')
    const user = await users.get(principal.userId)
    if (user === null) throw new AppError('UNAUTHORIZED', 'This account no longer exists')
    return { principal, user }
  }

  /**
   * The door's step-up for factors (auth/door.ts): a sign-in within 5 minutes, or the account's
   * current password (checked under the login limiter). 403 REAUTHENTICATION_REQUIRED otherwise.
   */
  const requireStepUp = async (context: Context, currentPassword: string | undefined) => {
    const principal = principalOf(context.set)
    if (principal?.kind !== 'user') throw new AppError('UNAUTHORIZED', 'Sign in first')
    await inputs.signIn.door.requireStepUp(
      principal,
      currentPassword,
      () => origin(context),
      'recent-or-password',
    )
  }

  return {
    guard: (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess),
    origin,
    callerOf,
    requireStepUp,
    stepUpErrors: errorResponses(
      'UNAUTHORIZED',
      'FORBIDDEN',
      'REAUTHENTICATION_REQUIRED',
      'RATE_LIMITED',
      'UNSUPPORTED_MEDIA_TYPE',
      'VALIDATION_ERROR',
    ),
    stepUpText:
      ' Needs a sign-in within the last 5 minutes, or `current_password` in the body (403 REAUTHENTICATION_REQUIRED otherwise).',
  }
}

/** A passkey's id from the path; 404 for one that cannot be an id. */
export function passkeyId(text: string): number {
  const id = parseRowId(text) ?? 0
  if (id === 0 || !Number.isSafeInteger(id)) throw notFound('No passkey with this id')
  return id
}
