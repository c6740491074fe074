import { Elysia } from 'elysia'
import type { CredentialJson } from '../../factors/webauthn'
import { NO_STORE } from '../../http/credentials'
import { jsonBody } from '../../http/json-body'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { auditSourceOf } from '../auth/principal'
import { answerSignIn } from '../auth/sign-in'
import { LoginAnswer } from '../auth/sign-in-schema'
import { type FactorRouteInputs, factorKit, passkeyId, tags } from './kit'
import {
  CreationOptions,
  CredentialBody,
  Passkey,
  PasskeyList,
  RequestOptions,
  StepUpBody,
} from './schema'

/** Passkeys (CONTRACT section 15): registration while signed in, sign-in without a name, the list. */
export function passkeyRoutes(inputs: FactorRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, factors } = inputs
  const kit = factorKit(inputs)
  const { callerOf, requireStepUp, origin, stepUpErrors, stepUpText } = kit
  const registerOptions = kit.guard('POST /auth/passkeys/register/options')
  const registerVerify = kit.guard('POST /auth/passkeys/register/verify')
  const loginOptions = kit.guard('POST /auth/passkeys/login/options')
  const loginVerify = kit.guard('POST /auth/passkeys/login/verify')
  const list = kit.guard('GET /me/passkeys')
  const remove = kit.guard('DELETE /me/passkeys/:id')
  return new Elysia({ prefix })
    .use(auth)
    .post(
      '/auth/passkeys/register/options',
      async (context) => {
        await requireStepUp(context, context.body?.current_password)
        const { user } = await callerOf(context.set)
        context.set.headers['cache-control'] = NO_STORE
        return await factors.passkeyRegistrationOptions(user)
      },
      {
        ...registerOptions.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Start registering a passkey',
          description: `WebAuthn creation options for the signed-in user (resident key and user verification required; its passkeys excluded). The challenge works once, for 5 minutes, on any instance.${stepUpText}`,
          security: registerOptions.security,
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
        ...registerVerify.hook,
        parse: jsonBody(),
        body: CredentialBody,
        detail: {
          tags,
          summary: 'Finish registering a passkey',
          description:
            'The body is the new credential’s toJSON() (and an optional name). 400 when the attestation does not verify, the origin is not allowed, or user verification is missing; TOKEN_USED/TOKEN_EXPIRED/TOKEN_INVALID for a challenge used, expired or not this user’s; 409 for a passkey registered already.',
          security: registerVerify.security,
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
        ...loginOptions.hook,
        detail: {
          tags,
          summary: 'Start a passkey sign-in',
          description:
            'WebAuthn request options without allowCredentials: the authenticator offers the passkeys it holds for roster (no username needed). The challenge works once, for 5 minutes.',
          security: loginOptions.security,
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
        // A passkey with user verification is two factors in one: no second step follows.
        return await answerSignIn(inputs.signIn, context, { id: userId }, by, 'passkey')
      },
      {
        ...loginVerify.hook,
        parse: jsonBody(),
        body: CredentialBody,
        detail: {
          tags,
          summary: 'Sign in with a passkey',
          description:
            'The body is the assertion’s toJSON(). Answers like POST /login (the user, a bearer token, the session cookie). 401 INVALID_CREDENTIALS for a passkey roster does not know, a signature that does not verify, or a passkey flagged as cloned (its counter went back); 400 for a wrong origin or missing user verification; TOKEN_* for a challenge used, expired or unknown.',
          security: loginVerify.security,
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
        return { data: await factors.passkeys(principal.userId) }
      },
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'The caller’s passkeys',
          description: 'Oldest first; never a key, only what tells them apart.',
          security: list.security,
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
        ...remove.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: StepUpBody,
        detail: {
          tags,
          summary: 'Delete one of the caller’s passkeys',
          description: `204; it signs nobody in from then on.${stepUpText}`,
          security: remove.security,
          responses: {
            204: { description: 'Deleted' },
            ...documented({ ...stepUpErrors, ...errorResponses('NOT_FOUND') }),
          },
        },
      },
    )
}
