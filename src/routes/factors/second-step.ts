import { Elysia } from 'elysia'
import { fieldDetail } from '../../errors/details'
import { AppError, validationFailed } from '../../errors/errors'
import { NO_STORE } from '../../http/credentials'
import { jsonBody } from '../../http/json-body'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { auditSourceOf } from '../auth/principal'
import { answerSignIn } from '../auth/sign-in'
import { LoginAnswer } from '../auth/sign-in-schema'
import { type FactorRouteInputs, factorKit, tags } from './kit'
import {
  CodeBody,
  FactorStatus,
  MfaVerifyBody,
  RecoveryCodes,
  StepUpBody,
  TotpEnrolment,
} from './schema'

/** TOTP, recovery codes and the second step of a sign-in (CONTRACT section 15). */
export function secondStepRoutes(inputs: FactorRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, factors, users } = inputs
  const kit = factorKit(inputs)
  const { callerOf, requireStepUp, origin, stepUpErrors, stepUpText } = kit
  const status = kit.guard('GET /me/factors')
  const enrol = kit.guard('POST /auth/totp/enroll')
  const confirm = kit.guard('POST /auth/totp/confirm')
  const removeTotp = kit.guard('DELETE /auth/totp')
  const codes = kit.guard('POST /auth/recovery-codes')
  const mfa = kit.guard('POST /auth/mfa/verify')
  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/me/factors',
      async ({ set }) => {
        const { principal } = await callerOf(set)
        return await factors.status(principal.userId)
      },
      {
        ...status.hook,
        detail: {
          tags,
          summary: 'The caller’s factors',
          description: 'Whether TOTP is on, the passkeys, and how many recovery codes are unused.',
          security: status.security,
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
        ...enrol.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Start TOTP',
          description: `A new secret (SHA-1, 6 digits, 30 s) and its otpauth:// URI for an authenticator app; TOTP is on once POST /auth/totp/confirm takes a code. A new enrolment replaces one not confirmed; 409 while TOTP is on.${stepUpText}`,
          security: enrol.security,
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
        ...confirm.hook,
        parse: jsonBody(),
        body: CodeBody,
        detail: {
          tags,
          summary: 'Turn TOTP on',
          description:
            'The app’s current code turns TOTP on and answers ten recovery codes, shown this once. From then on /login answers mfa_required and HTTP Basic is refused for the account. 422 for a wrong code; 409 with nothing to confirm.',
          security: confirm.security,
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
        ...removeTotp.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Turn TOTP off',
          description: `Removes the secret and the recovery codes. 404 when TOTP is not on.${stepUpText}`,
          security: removeTotp.security,
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
        ...codes.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'New recovery codes',
          description: `Ten new codes, shown this once; the old ones stop working. 409 when TOTP is not on.${stepUpText}`,
          security: codes.security,
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
        return await answerSignIn(
          inputs.signIn,
          context,
          { id: done.done.userId },
          by,
          done.done.method,
        )
      },
      {
        ...mfa.hook,
        parse: jsonBody(),
        body: MfaVerifyBody,
        detail: {
          tags,
          summary: 'Finish a sign-in with TOTP or a recovery code',
          description:
            'The mfa_token from /login (5 minutes) with the authenticator app’s `code` or one `recovery_code`. Answers like /login. A code is taken once; a wrong one is 401 and counts as a failed sign-in for the account (429 after as many as a password’s); the token takes 5 wrong tries, then TOKEN_EXPIRED.',
          security: mfa.security,
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
