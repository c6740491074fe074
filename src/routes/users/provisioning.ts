import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import { notFound } from '../../errors/errors'
import { documented, errorResponses } from '../../http/openapi-schemas'
import type { ScimUsers } from '../../scim/service'
import type { AuthPlugin } from '../auth/plugin'
import { usersAccess } from './access'
import { parseUserId } from './routes'

export interface ProvisioningRouteInputs {
  auth: AuthPlugin
  scimUsers: Pick<ScimUsers, 'provenance'>
  config: Pick<Config, 'usersAccess'>
}

const Provisioning = t.Object(
  {
    user_id: Type.Integer({ minimum: 1 }),
    provisioned: t.Boolean({
      description: 'Whether an identity provider described the user through SCIM',
    }),
    external_id: t.Union([t.String(), t.Null()], {
      description: "The identity provider's id for the user (SCIM's externalId)",
    }),
  },
  { description: 'Where a user came from' },
)

/**
 * `GET /users/{id}/provisioning`: whether a user came through SCIM and its externalId, for the
 * console. Its own route, so the users' reads (the hot path) join nothing more.
 */
export function provisioningRoutes(inputs: ProvisioningRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, scimUsers, config } = inputs
  const access = usersAccess(config.usersAccess)
  return new Elysia({ prefix }).use(auth).get(
    '/users/:id/provisioning',
    async ({ params, set }) => {
      const id = parseUserId(params.id)
      access.requireSelf(set, 'users:read', id)
      const found = await scimUsers.provenance(id)
      if (found === null) throw notFound('No user with this id')
      return { user_id: id, provisioned: found.provisioned, external_id: found.externalId }
    },
    {
      ...access.provisioning.hook,
      detail: {
        tags: ['users'],
        summary: "Where a user came from (SCIM's externalId)",
        description:
          'provisioned is true when an identity provider made or described the user through SCIM (see /scim/v2); external_id is its id there. The console shows both.',
        security: access.provisioning.security,
        responses: documented({
          200: Provisioning,
          ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
        }),
      },
    },
  )
}
