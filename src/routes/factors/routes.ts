import { type AnyElysia, Elysia } from 'elysia'
import { type Authenticator, accountDeactivated } from '../../auth/authenticator'
import type { CredentialStore } from '../../auth/sessions'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { fieldDetail } from '../../errors/details'
import { AppError, notFound, validationFailed } from '../../errors/errors'
import type { SecondFactors } from '../../factors/service'
import type { CredentialJson } from '../../factors/webauthn'
import { clientIp } from '../../http/client'
import { NO_STORE } from '../../http/credentials'
import { jsonBody } from '../../http/json-body'
import { documented, errorResponses } from '../../http/openapi-schemas'
import type { UserStore } from '../../users/store'
import type { AuthPlugin, CookieSecurity } from '../auth/plugin'
import { auditSourceOf, principalOf, requestIdOf } from '../auth/principal'
import { answerSignIn, type SignInAnswerInputs } from '../auth/sign-in'
import { LoginAnswer } from '../auth/sign-in-schema'
import { recentSignIn } from '../auth/step-up'
import { guardOf, requireSelfOr } from '../authorisation'
import { parseUserId } from '../users/routes'
import {
  CodeBody,
  CreationOptions,
  CredentialBody,
  FactorStatus,
  MfaVerifyBody,
  Passkey,
  PasskeyList,
  RecoveryCodes,
  RequestOptions,
  StepUpBody,
  TotpEnrolment,
} from './schema'

const tags = ['second factors']

export interface FactorRouteInputs {
  auth: AuthPlugin
  factors: SecondFactors
  users: Pick<UserStore, 'get' | 'withPasswordHash'>
  credentials: Pick<CredentialStore, 'signedInAt'>
  authenticator: Pick<Authenticator, 'confirmPassword' | 'underLimit'>
  signIn: SignInAnswerInputs
  config: CookieSecurity & Pick<Config, 'usersAccess'>
  clock: () => number
}

type Context = { request: Request; server: Bun.Server<unknown> | null; set: { headers: object } }

/**
 * Passkeys, TOTP, recovery codes and the second step of a sign-in (CONTRACT section 15), under
 * one prefix. The ceremonies live in the database (any instance finishes what another began).
 */
export function factorRoutes(inputs: FactorRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, factors, users, config } = inputs
  const signedInRecently = recentSignIn(inputs.credentials, inputs.clock)
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess)
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
   * The step-up rule: a sign-in within 5 minutes, or the account's current password (checked
   * under the login limiter). 403 REAUTHENTICATION_REQUIRED otherwise.
   */
  const requireStepUp = async (context: Context, currentPassword: string | undefined) => {
    const principal = principalOf(context.set)
    if (principal?.kind !== 'user') throw new AppError('UNAUTHORIZED', 'Sign in first')
    if (await signedInRecently(principal)) return
    const account = await users.withPasswordHash(principal.userId)
    if (currentPassword !== undefined && currentPassword !== '' && account?.passwordHash) {
      const ok = await inputs.authenticator.confirmPassword(
        { email: account.user.email, passwordHash: account.passwordHash },
        currentPassword,
        origin(context),
      )
      if (ok) return
    }
    throw new AppError(
      'REAUTHENTICATION_REQUIRED',
      'Changing how this account signs in needs a sign-in within the last 5 minutes, or current_password',
      [
        fieldDetail(
          'current_password',
          currentPassword === undefined || currentPassword === ''
            ? 'is required when the sign-in is older than 5 minutes'
            : 'does not match the account’s current password',
        ),
      ],
    )
  }

  const passkeyId = (text: string) => {
    const id = parseRowId(text) ?? 0
    if (id === 0 || !Number.isSafeInteger(id)) throw notFound('No passkey with this id')
    return id
  }

  const routes = new Elysia({ prefix }).use(auth)
  const self = {
    registerOptions: guard('POST /auth/passkeys/register/options'),
    registerVerify: guard('POST /auth/passkeys/register/verify'),
    loginOptions: guard('POST /auth/passkeys/login/options'),
    loginVerify: guard('POST /auth/passkeys/login/verify'),
    list: guard('GET /me/passkeys'),
    remove: guard('DELETE /me/passkeys/:id'),
    status: guard('GET /me/factors'),
    enrol: guard('POST /auth/totp/enroll'),
    confirm: guard('POST /auth/totp/confirm'),
    removeTotp: guard('DELETE /auth/totp'),
    codes: guard('POST /auth/recovery-codes'),
    mfa: guard('POST /auth/mfa/verify'),
    userStatus: guard('GET /users/:id/factors'),
    reset: guard('DELETE /users/:id/factors'),
  }
  const stepUpErrors = errorResponses(
    'UNAUTHORIZED',
    'FORBIDDEN',
    'REAUTHENTICATION_REQUIRED',
    'RATE_LIMITED',
    'UNSUPPORTED_MEDIA_TYPE',
    'VALIDATION_ERROR',
  )
  const stepUpText =
    ' Needs a sign-in within the last 5 minutes, or `current_password` in the body (403 REAUTHENTICATION_REQUIRED otherwise).'

  const passkeys = routes
    .post(
      '/auth/passkeys/register/options',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { user } = await callerOf(context.set)
        context.set.headers['cache-control'] = NO_STORE
        return await factors.passkeyRegistrationOptions(user)
      },
      {
        ...self.registerOptions.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Start registering a passkey',
          description: `WebAuthn creation options for the signed-in user (resident key and user verification required; its passkeys excluded). The challenge works once, for 5 minutes, on any instance.${stepUpText}`,
          security: self.registerOptions.security,
          responses: documented({ 200: CreationOptions, ...stepUpErrors }),
        },
      },
    )
    .post(
      '/auth/passkeys/register/verify',
      async ({ body, set }) => {
        const { principal } = await callerOf(set)
        set.status = 201
        return await factors.registerPasskey(
          principal.userId,
          body as unknown as CredentialJson,
          body.name,
          auditSourceOf(set),
        )
      },
      {
        ...self.registerVerify.hook,
        parse: jsonBody(),
        body: CredentialBody,
        detail: {
          tags,
          summary: 'Finish registering a passkey',
          description:
            'The body is the new credential’s toJSON() (and an optional name). 400 when the attestation does not verify, the origin is not allowed, or user verification is missing; TOKEN_USED/TOKEN_EXPIRED/TOKEN_INVALID for a challenge used, expired or not this user’s; 409 for a passkey registered already.',
          security: self.registerVerify.security,
          responses: documented({
            201: Passkey,
            ...errorResponses(
              'BAD_REQUEST',
              'TOKEN_INVALID',
              'TOKEN_USED',
              'TOKEN_EXPIRED',
              'UNAUTHORIZED',
              'CONFLICT',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .post(
      '/auth/passkeys/login/options',
      async ({ set }) => {
        set.headers['cache-control'] = NO_STORE
        return await factors.passkeyLoginOptions()
      },
      {
        ...self.loginOptions.hook,
        detail: {
          tags,
          summary: 'Start a passkey sign-in',
          description:
            'WebAuthn request options without allowCredentials: the authenticator offers the passkeys it holds for roster (no username needed). The challenge works once, for 5 minutes.',
          security: self.loginOptions.security,
          responses: documented({ 200: RequestOptions, ...errorResponses('RATE_LIMITED') }),
        },
      },
    )
    .post(
      '/auth/passkeys/login/verify',
      async (context) => {
        const by = auditSourceOf(context.set, origin(context).ip)
        const userId = await factors.signInWithPasskey(
          context.body as unknown as CredentialJson,
          by,
        )
        const user = await users.get(userId)
        if (user === null) throw new AppError('INVALID_CREDENTIALS', 'This account is gone')
        if (!user.active) throw accountDeactivated()
        // A passkey with user verification is two factors in one: no second step follows.
        return await answerSignIn(
          inputs.signIn,
          context,
          { id: userId, secondFactor: false },
          by,
          'passkey',
        )
      },
      {
        ...self.loginVerify.hook,
        parse: jsonBody(),
        body: CredentialBody,
        detail: {
          tags,
          summary: 'Sign in with a passkey',
          description:
            'The body is the assertion’s toJSON(). Answers like POST /login (the user, a bearer token, the session cookie). 401 INVALID_CREDENTIALS for a passkey roster does not know, a signature that does not verify, or a passkey flagged as cloned (its counter went back); 400 for a wrong origin or missing user verification; TOKEN_* for a challenge used, expired or unknown.',
          security: self.loginVerify.security,
          responses: documented({
            200: LoginAnswer,
            ...errorResponses(
              'BAD_REQUEST',
              'TOKEN_INVALID',
              'TOKEN_USED',
              'TOKEN_EXPIRED',
              'INVALID_CREDENTIALS',
              'FORBIDDEN',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .get(
      '/me/passkeys',
      async ({ set }) => {
        const { principal } = await callerOf(set)
        return { data: (await factors.status(principal.userId)).passkeys }
      },
      {
        ...self.list.hook,
        detail: {
          tags,
          summary: 'The caller’s passkeys',
          description: 'Oldest first; never a key, only what tells them apart.',
          security: self.list.security,
          responses: documented({ 200: PasskeyList, ...errorResponses('UNAUTHORIZED') }),
        },
      },
    )
    .delete(
      '/me/passkeys/:id',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { principal } = await callerOf(context.set)
        const id = passkeyId(context.params.id)
        await factors.removePasskey(principal.userId, id, auditSourceOf(context.set))
        context.set.status = 204
        return ''
      },
      {
        ...self.remove.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Delete one of the caller’s passkeys',
          description: `204; it signs nobody in from then on.${stepUpText}`,
          security: self.remove.security,
          responses: {
            204: { description: 'Deleted' },
            ...documented({ ...stepUpErrors, ...errorResponses('NOT_FOUND') }),
          },
        },
      },
    )
  const totp = new Elysia({ prefix })
    .use(auth)
    .get(
      '/me/factors',
      async ({ set }) => {
        const { principal } = await callerOf(set)
        return await factors.status(principal.userId)
      },
      {
        ...self.status.hook,
        detail: {
          tags,
          summary: 'The caller’s factors',
          description: 'Whether TOTP is on, the passkeys, and how many recovery codes are unused.',
          security: self.status.security,
          responses: documented({ 200: FactorStatus, ...errorResponses('UNAUTHORIZED') }),
        },
      },
    )
    .post(
      '/auth/totp/enroll',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { user } = await callerOf(context.set)
        context.set.headers['cache-control'] = NO_STORE
        return await factors.enrolTotp(user)
      },
      {
        ...self.enrol.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Start TOTP',
          description: `A new secret (SHA-1, 6 digits, 30 s) and its otpauth:// URI for an authenticator app; TOTP is on once POST /auth/totp/confirm takes a code. A new enrolment replaces one not confirmed; 409 while TOTP is on.${stepUpText}`,
          security: self.enrol.security,
          responses: documented({
            200: TotpEnrolment,
            ...stepUpErrors,
            ...errorResponses('CONFLICT'),
          }),
        },
      },
    )
    .post(
      '/auth/totp/confirm',
      async ({ body, set }) => {
        const { principal } = await callerOf(set)
        set.headers['cache-control'] = NO_STORE
        const codes = await factors.confirmTotp(principal.userId, body.code, auditSourceOf(set))
        return { recovery_codes: codes }
      },
      {
        ...self.confirm.hook,
        parse: jsonBody(),
        body: CodeBody,
        detail: {
          tags,
          summary: 'Turn TOTP on',
          description:
            'The app’s current code turns TOTP on and answers ten recovery codes, shown this once. From then on /login answers mfa_required and HTTP Basic is refused for the account. 422 for a wrong code; 409 with nothing to confirm.',
          security: self.confirm.security,
          responses: documented({
            200: RecoveryCodes,
            ...errorResponses(
              'UNAUTHORIZED',
              'CONFLICT',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .delete(
      '/auth/totp',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { principal } = await callerOf(context.set)
        await factors.removeTotp(principal.userId, auditSourceOf(context.set))
        context.set.status = 204
        return ''
      },
      {
        ...self.removeTotp.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Turn TOTP off',
          description: `Removes the secret and the recovery codes. 404 when TOTP is not on.${stepUpText}`,
          security: self.removeTotp.security,
          responses: {
            204: { description: 'TOTP is off' },
            ...documented({ ...stepUpErrors, ...errorResponses('NOT_FOUND') }),
          },
        },
      },
    )
    .post(
      '/auth/recovery-codes',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { principal } = await callerOf(context.set)
        context.set.headers['cache-control'] = NO_STORE
        const codes = await factors.regenerateRecoveryCodes(
          principal.userId,
          auditSourceOf(context.set),
        )
        return { recovery_codes: codes }
      },
      {
        ...self.codes.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'New recovery codes',
          description: `Ten new codes, shown this once; the old ones stop working. 409 when TOTP is not on.${stepUpText}`,
          security: self.codes.security,
          responses: documented({
            200: RecoveryCodes,
            ...stepUpErrors,
            ...errorResponses('CONFLICT'),
          }),
        },
      },
    )
    .post(
      '/auth/mfa/verify',
      async (context) => {
        const { body } = context
        const answer = secondStepAnswer(body)
        const userId = await factors.secondStepUser(body.mfa_token)
        const user = await users.get(userId)
        if (user === null) throw new AppError('INVALID_CREDENTIALS', 'This account is gone')
        const by = auditSourceOf(context.set, origin(context).ip)
        type Done = { done: { userId: number; method: 'totp' | 'recovery_code' } }
        const done = await inputs.authenticator.underLimit<Done>(
          user.email,
          origin(context),
          async () => {
            const outcome = await factors.finishSecondStep(body.mfa_token, answer)
            return 'wrong' in outcome ? { failed: outcome.wrong } : { done: outcome }
          },
        )
        if (done === null) {
          throw new AppError(
            'INVALID_CREDENTIALS',
            'The code is wrong (an mfa_token takes 5 tries)',
          )
        }
        if (!user.active) throw accountDeactivated()
        return await answerSignIn(
          inputs.signIn,
          context,
          { id: done.done.userId, secondFactor: false },
          by,
          done.done.method,
        )
      },
      {
        ...self.mfa.hook,
        parse: jsonBody(),
        body: MfaVerifyBody,
        detail: {
          tags,
          summary: 'Finish a sign-in with TOTP or a recovery code',
          description:
            'The mfa_token from /login (5 minutes) with the authenticator app’s `code` or one `recovery_code`. Answers like /login. A code is taken once; a wrong one is 401 and counts as a failed sign-in for the account (429 after as many as a password’s); the token takes 5 wrong tries, then TOKEN_EXPIRED.',
          security: self.mfa.security,
          responses: documented({
            200: LoginAnswer,
            ...errorResponses(
              'TOKEN_INVALID',
              'TOKEN_USED',
              'TOKEN_EXPIRED',
              'INVALID_CREDENTIALS',
              'FORBIDDEN',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
              'RATE_LIMITED',
            ),
          }),
        },
      },
    )
  const admin = new Elysia({ prefix })
    .use(auth)
    .get(
      '/users/:id/factors',
      async ({ params, set }) => {
        const id = parseUserId(params.id)
        requireSelfOr(principalOf(set), 'users:read', id)
        if ((await users.get(id)) === null) throw notFound('No user with this id')
        return await factors.status(id)
      },
      {
        ...self.userStatus.hook,
        detail: {
          tags,
          summary: 'A user’s factors',
          description:
            'For the console and an admin: TOTP on or off, passkeys, recovery codes left.',
          security: self.userStatus.security,
          responses: documented({
            200: FactorStatus,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .delete(
      '/users/:id/factors',
      async ({ params, set }) => {
        const id = parseUserId(params.id)
        if ((await users.get(id)) === null) throw notFound('No user with this id')
        await factors.reset(id, auditSourceOf(set))
        set.status = 204
        return ''
      },
      {
        ...self.reset.hook,
        detail: {
          tags,
          summary: 'Reset a user’s factors',
          description:
            'An admin or a key with users:write removes every passkey, TOTP and the recovery codes of a user who lost them (audited as factors.removed). The user then signs in with its password or a mailed link.',
          security: self.reset.security,
          responses: {
            204: { description: 'The user has no second factor now' },
            ...documented(errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')),
          },
        },
      },
    )
  // Three plugins, not one chain: one chain of 14 routes is more than TypeScript's unions hold.
  return new Elysia()
    .use(passkeys as unknown as AnyElysia)
    .use(totp as unknown as AnyElysia)
    .use(admin as unknown as AnyElysia)
}

/** Exactly one of code and recovery_code. */
function secondStepAnswer(body: { code?: string; recovery_code?: string }) {
  if ((body.code === undefined) === (body.recovery_code === undefined)) {
    throw validationFailed([fieldDetail('code', 'send either code or recovery_code (one of them)')])
  }
  return body.code !== undefined
    ? { code: body.code }
    : { recoveryCode: body.recovery_code as string }
}
