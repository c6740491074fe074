import { Elysia, t } from 'elysia'
import type { Authenticator } from '../../auth/authenticator'
import type { CredentialStore, SignedInUser } from '../../auth/sessions'
import type { Config } from '../../config'
import { fieldDetail } from '../../errors/details'
import { AppError, validationFailed } from '../../errors/errors'
import { clientIp } from '../../http/client'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { toView, type UserRecord } from '../../users/records'
import type { UserStore } from '../../users/store'
import { clearSessionCookie, sessionCookie } from '../auth/cookies'
import { type AuthPlugin, type CookieSecurity, isSecure } from '../auth/plugin'
import { auditSourceOf, principalOf, requestIdOf } from '../auth/principal'
import { answerSignIn, type SignInAnswerInputs } from '../auth/sign-in'
import { guardOf } from '../authorisation'
import type { User } from '../users/schema'
import { loginBody } from './login-body'
import { LoginAnswer, LoginBody, MfaRequiredAnswer, SecureAnswer } from './schema'

const tags = ['credentials']

/**
 * The account routes: /login, /logout, /me and /secure under one prefix. They sit above both
 * auth (credentials) and users (the records a credential names), so either may be used here.
 */
/** What the account routes are given by the composition root. */
export interface AccountRouteInputs extends SignInAnswerInputs {
  auth: AuthPlugin
  authenticator: Pick<Authenticator, 'signIn'>
  users: Pick<UserStore, 'get'>
  credentials: CredentialStore
  config: CookieSecurity & Pick<Config, 'usersAccess'>
}

export function accountRoutes(inputs: AccountRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, users, credentials, authenticator, config } = inputs
  const logout = guardOf('POST /logout', config.usersAccess)
  const me = guardOf('GET /me', config.usersAccess)
  const secure = guardOf('GET /secure', config.usersAccess)

  /** A user's record; a user deleted mid-request is a 401 like any lost credential. */
  const userRecord = async (userId: number): Promise<User> => {
    const user = await users.get(userId)
    if (user === null) throw new AppError('UNAUTHORIZED', 'This account no longer exists')
    return toView(user)
  }

  /**
   * The caller's record, groups included: the row Basic's lookup read with the credential when
   * it is whole (a second read of it cost /secure a quarter of its time), else read by id (a
   * session's or token's lookup reads the row without its groups).
   */
  const callerRecord = async (set: object): Promise<User> => {
    const principal = principalOf(set)
    if (principal?.kind !== 'user') throw new AppError('UNAUTHORIZED', 'This route needs a user')
    const read = principal.user
    return read !== undefined && isWholeRecord(read) ? toView(read) : userRecord(principal.userId)
  }

  return new Elysia({ prefix })
    .use(auth)
    .post(
      '/login',
      async ({ body, request, server, cookie, set }) => {
        const { address, password } = signInFields(body)
        const ip = clientIp(request, server, config.trustProxy)
        const user = await authenticator.signIn(address, password, {
          ip,
          requestId: requestIdOf(set),
        })
        if (user === null)
          throw new AppError('INVALID_CREDENTIALS', 'The email or password is wrong')
        return await answerSignIn(
          inputs,
          { request, cookie, set },
          user,
          auditSourceOf(set, ip),
          'password',
        )
      },
      {
        parse: loginBody(),
        body: LoginBody,
        detail: {
          tags,
          summary: 'Sign in',
          description:
            'A form (also JSON or multipart) with email, username or login, and password or pass. Answers a bearer token (1 h) and sets the session cookie (7 days, renewed on use). A wrong email and a wrong password get the same 401. After 10 failures for one address or 50 from one IP within 15 minutes, 429 with Retry-After, even for the right password. An account with TOTP gets `{ "mfa_required": true, "mfa_token": … }` instead (no cookie, no token): POST /auth/mfa/verify with the code finishes the sign-in within 5 minutes.',
          responses: documented({
            200: t.Union([LoginAnswer, MfaRequiredAnswer]),
            ...errorResponses(
              'BAD_REQUEST',
              'INVALID_CREDENTIALS',
              'FORBIDDEN',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
              'RATE_LIMITED',
            ),
          }),
        },
      },
    )
    .post(
      '/logout',
      async ({ request, set, cookie }) => {
        const principal = principalOf(set)
        const by = auditSourceOf(set)
        const revoked: Promise<void>[] = []
        if (principal?.kind === 'user' && principal.secret !== undefined) {
          if (principal.scheme === 'bearer')
            revoked.push(credentials.revokeAccessToken(principal.secret, by))
          if (principal.scheme === 'session')
            revoked.push(credentials.revokeSession(principal.secret, by))
        }
        // A cookie sent along with a bearer token was presented too: it ends as well.
        const session = sessionCookie(cookie)
        if (typeof session.value === 'string' && session.value !== '') {
          revoked.push(credentials.revokeSession(session.value, by))
        }
        // Answered once the revocations are durable (they share one group commit).
        await Promise.all(revoked)
        clearSessionCookie(session, isSecure(request, config))
        set.status = 204
        return ''
      },
      {
        ...logout.hook,
        detail: {
          tags,
          summary: 'Sign out',
          description:
            'Revokes the bearer token or session that was presented and clears the cookie. 204.',
          security: logout.security,
          responses: {
            204: { description: 'Signed out; the cookie is cleared' },
            ...documented(errorResponses('UNAUTHORIZED', 'FORBIDDEN')),
          },
        },
      },
    )
    .get('/me', ({ set }) => callerRecord(set), {
      ...me.hook,
      detail: {
        tags,
        summary: 'The caller’s own record',
        description: 'The user the bearer token or session cookie belongs to.',
        security: me.security,
        responses: documented({
          200: LoginAnswer.properties.user,
          ...errorResponses('UNAUTHORIZED'),
        }),
      },
    })
    .get(
      '/secure',
      async ({ set }) => ({ authenticated: true as const, user: await callerRecord(set) }),
      {
        ...secure.hook,
        detail: {
          tags,
          summary: 'Protected content (HTTP Basic)',
          description:
            'Basic email:password. A verified credential is remembered for a minute (keyed by a hash), so argon2 does not run on every request; a password change drops it.',
          security: secure.security,
          responses: documented({
            200: SecureAnswer,
            ...errorResponses('UNAUTHORIZED', 'RATE_LIMITED'),
          }),
        },
      },
    )
}

/**
 * The identifier (email, username or login: the first one given) and the secret (password or
 * pass); 422 naming what is missing. The password is never echoed.
 */
/** Whether a credential's lookup read every field of the record (Basic's does). */
function isWholeRecord(user: SignedInUser): user is SignedInUser & UserRecord {
  return (
    user.groups !== undefined &&
    user.username !== undefined &&
    user.active !== undefined &&
    user.email_verified_at !== undefined
  )
}

function signInFields(body: Record<string, string | undefined>): {
  address: string
  password: string
} {
  const identifier = body.email ?? body.username ?? body.login
  const password = body.password ?? body.pass
  const problems = []
  if (identifier === undefined || identifier.trim() === '') {
    problems.push(fieldDetail('email', 'is required (as email, username or login)', identifier))
  }
  if (password === undefined || password === '') {
    problems.push(fieldDetail('password', 'is required (as password or pass)'))
  }
  if (problems.length > 0 || identifier === undefined || password === undefined) {
    throw validationFailed(problems)
  }
  return { address: identifier.trim().toLowerCase(), password }
}
