import { Elysia } from 'elysia'
import { adminTargetRefusal } from '../../auth/authority'
import { isUser } from '../../auth/principal'
import { notFound } from '../../errors/errors'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { auditSourceOf, principalOf } from '../auth/principal'
import { requireSelfOr } from '../authorisation'
import { parseUserId } from '../users/routes'
import { type FactorRouteInputs, factorKit, tags } from './kit'
import { FactorStatus } from './schema'

/** An admin's view and reset of a user's factors. */
export function factorAdminRoutes(inputs: FactorRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, factors, users } = inputs
  const kit = factorKit(inputs)
  const userStatus = kit.guard('GET /users/:id/factors')
  const reset = kit.guard('DELETE /users/:id/factors')
  return new Elysia({ prefix })
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
        ...userStatus.hook,
        detail: {
          tags,
          summary: 'A user’s factors',
          description:
            'For the console and an admin: TOTP on or off, passkeys, recovery codes left.',
          security: userStatus.security,
          responses: documented({
            200: FactorStatus,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .delete(
      '/users/:id/factors',
      async (context) => {
        const { params, set } = context
        const id = parseUserId(params.id)
        const user = await users.get(id)
        if (user === null) throw notFound('No user with this id')
        // An admin's factors are reset only with `*` (section 17).
        const refusal = adminTargetRefusal(principalOf(set), id)
        if (user.role === 'admin' && refusal !== undefined) throw refusal
        // An admin resetting its own factors is the account changing them: the same step-up as
        // DELETE /auth/totp (a sign-in within 5 minutes), or a stale token would skip it here.
        if (isUser(principalOf(set), id)) await kit.requireStepUp(context, undefined)
        await factors.reset(id, auditSourceOf(set))
        set.status = 204
        return ''
      },
      {
        ...reset.hook,
        detail: {
          tags,
          summary: 'Reset a user’s factors',
          description:
            'An admin or a key with users:write removes every passkey, TOTP and the recovery codes of a user who lost them (audited as factors.removed); an admin’s only with *. The user then signs in with its password or a mailed link. An admin resetting its own needs a sign-in within the last 5 minutes (403 REAUTHENTICATION_REQUIRED otherwise), as DELETE /auth/totp does.',
          security: reset.security,
          responses: {
            204: { description: 'The user has no second factor now' },
            ...documented(
              errorResponses(
                'UNAUTHORIZED',
                'FORBIDDEN',
                'NOT_FOUND',
                'REAUTHENTICATION_REQUIRED',
                'RATE_LIMITED',
              ),
            ),
          },
        },
      },
    )
}
