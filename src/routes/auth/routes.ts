import { Elysia } from 'elysia'
import type { ApiKeyStore } from '../../auth/api-keys'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { notFound } from '../../errors/errors'
import { NO_STORE } from '../../http/credentials'
import { jsonBody } from '../../http/json-body'
import { documented, errorResponses, OFFSET_PAGE_PARAMETERS } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import type { AuthPlugin } from './plugin'
import { principalOf } from './principal'
import { ApiKeyPage, CreateApiKeyBody, CreatedApiKey, DataAnswer, RevokedApiKey } from './schema'

const tags = ['credentials']

/** /data and /api-keys under one prefix: the routes an API key is for. */
/** What the API-key routes are given by the composition root. */
export interface AuthRouteInputs {
  auth: AuthPlugin
  apiKeys: ApiKeyStore
  /** Row counts for GET /data. */
  counts: () => Promise<{ users: number; uploads: number; webhook_events: number }>
  config: Pick<Config, 'publicUrl'>
}

export function authRoutes(inputs: AuthRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, apiKeys, counts, config } = inputs
  const listPath = `${prefix}/api-keys`

  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/data',
      async ({ set }) => {
        const principal = principalOf(set)
        const key =
          principal?.kind === 'apiKey' ? { id: principal.keyId, name: principal.name } : null
        return { data: await counts(), key }
      },
      {
        auth: { schemes: ['apiKey'] },
        detail: {
          tags,
          summary: 'Service data (API key)',
          description:
            'How many users, uploads and webhook events roster holds, and which API key asked.',
          security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
          responses: documented({
            200: DataAnswer,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED'),
          }),
        },
      },
    )
    .post(
      '/api-keys',
      async ({ body, set }) => {
        set.status = 201
        set.headers['cache-control'] = NO_STORE
        // The key that asks records itself as the parent: revoking it revokes this one too.
        const principal = principalOf(set)
        const parent = principal?.kind === 'apiKey' ? principal.keyId : null
        return await apiKeys.create(body.name.trim(), parent)
      },
      {
        auth: { schemes: ['apiKey'] },
        parse: jsonBody(),
        body: CreateApiKeyBody,
        detail: {
          tags,
          summary: 'Create an API key',
          description:
            'The key is in this answer only; roster keeps its SHA-256. The key that asks is recorded as its parent: revoking the parent revokes it too.',
          security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
          responses: documented({
            201: CreatedApiKey,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .get(
      '/api-keys',
      ({ request, set }) =>
        offsetPageAnswer(request, set, {
          path: listPath,
          publicUrl: config.publicUrl,
          list: (page) => apiKeys.list(page),
        }),
      {
        auth: { schemes: ['apiKey'] },
        detail: {
          tags,
          summary: 'List API keys',
          description: 'Active keys, oldest first, paginated like /users.',
          security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
          parameters: OFFSET_PAGE_PARAMETERS,
          responses: documented({
            200: ApiKeyPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .delete(
      '/api-keys/:id',
      async ({ params }) => {
        const id = parseRowId(params.id) ?? 0
        if (id === 0 || !Number.isSafeInteger(id) || !(await apiKeys.revoke(id))) {
          throw notFound('No active API key with this id')
        }
        return { id, revoked: true as const }
      },
      {
        auth: { schemes: ['apiKey'] },
        detail: {
          tags,
          summary: 'Revoke an API key',
          description:
            'The key, and every key made from it (at any depth), is refused from the next request on.',
          security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
          responses: documented({
            200: RevokedApiKey,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'NOT_FOUND'),
          }),
        },
      },
    )
}
