import { Elysia } from 'elysia'
import { beyond, type Grant } from '../../auth/access'
import type { ApiKeyStore } from '../../auth/api-keys'
import { keyRevocationRefusal } from '../../auth/authority'
import type { DoorAccount, SignInDoor } from '../../auth/door'
import { grantsOf, type Principal } from '../../auth/principal'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { fieldDetail } from '../../errors/details'
import { AppError, notFound, validationFailed } from '../../errors/errors'
import { clientIp } from '../../http/client'
import { NO_STORE } from '../../http/credentials'
import { jsonBody } from '../../http/json-body'
import { chronologicalListParameters, documented, errorResponses } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import { guardOf } from '../authorisation'
import type { AuthPlugin } from './plugin'
import { auditSourceOf, principalOf, requestIdOf } from './principal'
import { ApiKeyPage, CreateApiKeyBody, CreatedApiKey, DataAnswer, RevokedApiKey } from './schema'

const tags = ['credentials']

/** /data and /api-keys under one prefix: the routes an API key is for. */
/** What the API-key routes are given by the composition root. */
export interface AuthRouteInputs {
  auth: AuthPlugin
  apiKeys: ApiKeyStore
  /** The step-up a user's credential takes before minting a key (auth/door.ts). */
  door: Pick<SignInDoor<DoorAccount>, 'requireStepUp'>
  trustProxy: Config['trustProxy']
  /** Row counts for GET /data. */
  counts: () => Promise<{ users: number; uploads: number; webhook_events: number }>
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
  /** Epoch milliseconds, to judge an expiry. */
  clock: () => number
}

export function authRoutes(inputs: AuthRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, apiKeys, counts, config } = inputs
  const listPath = `${prefix}/api-keys`
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess)
  const data = guard('GET /data')
  const create = guard('POST /api-keys')
  const list = guard('GET /api-keys')
  const revoke = guard('DELETE /api-keys/:id')

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
        ...data.hook,
        detail: {
          tags,
          summary: 'Service data (API key)',
          description:
            'How many users, uploads and webhook events roster holds, and which API key asked (null for an admin).',
          security: data.security,
          responses: documented({
            200: DataAnswer,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN'),
          }),
        },
      },
    )
    .post(
      '/api-keys',
      async ({ body, set, request, server }) => {
        set.status = 201
        set.headers['cache-control'] = NO_STORE
        // The key that asks records itself as the parent: revoking it revokes this one too.
        const principal = principalOf(set)
        // A new key is a new credential: a user's session or token mints one only within 5
        // minutes of its sign-in, or with its current password (GitHub's sudo mode). A stale
        // stolen token cannot turn itself into a key that outlives it.
        if (principal?.kind === 'user') {
          await inputs.door.requireStepUp(
            principal,
            body.current_password,
            () => ({
              ip: clientIp(request, server, inputs.trustProxy),
              requestId: requestIdOf(set),
            }),
            'recent-or-password',
          )
        }
        const held = grantsOf(principal)
        const scopes = (body.scopes as Grant[] | undefined) ?? [...held]
        const over = beyond(scopes, held)
        if (over.length > 0) {
          throw new AppError('FORBIDDEN', 'A key can be given at most the scopes of its creator', [
            fieldDetail('scopes', `${over.join(', ')} is not held by the caller`, over.join(' ')),
          ])
        }
        const asked =
          body.expires_at === undefined ? null : futureTime(body.expires_at, inputs.clock())
        const expiry = clampedExpiry(asked, principal)
        const created = await apiKeys.create(
          {
            name: body.name.trim(),
            parentId: principal?.kind === 'apiKey' ? principal.keyId : null,
            createdByUser: creatingUser(principal),
            scopes,
            expiresAt: expiry.expiresAt,
          },
          auditSourceOf(set),
        )
        return { ...created, expires_at_clamped: expiry.clamped }
      },
      {
        ...create.hook,
        parse: jsonBody(),
        body: CreateApiKeyBody,
        detail: {
          tags,
          summary: 'Create an API key',
          description:
            'The key is in this answer only; roster keeps its SHA-256. The key that asks is recorded as its parent: revoking the parent revokes it too. `scopes` are at most the caller’s (403 FORBIDDEN naming the scope otherwise); left out, the new key gets the caller’s. An admin’s session or token holds every scope, and the key records that admin (`created_by_user`): it stops working when the admin is demoted, deactivated or deleted. `expires_at` must lie ahead; after it the key is refused like a revoked one. A key made by a key that expires expires no later than it: `expires_at` is clamped, and `expires_at_clamped` says so. With a user’s session or token, a sign-in within the last 5 minutes or `current_password` is needed (403 REAUTHENTICATION_REQUIRED otherwise): a new key is a new credential.',
          security: create.security,
          responses: documented({
            201: CreatedApiKey,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'FORBIDDEN',
              'REAUTHENTICATION_REQUIRED',
              'RATE_LIMITED',
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
          usually: 'oldest',
          list: (page) => apiKeys.list(page),
        }),
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'List API keys',
          description:
            'Keys not revoked (expired ones too, with their expires_at), oldest first (sort=-created: newest first), paginated like /users.',
          security: list.security,
          parameters: chronologicalListParameters('oldest'),
          responses: documented({
            200: ApiKeyPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .delete(
      '/api-keys/:id',
      async ({ params, set }) => {
        const id = parseRowId(params.id) ?? 0
        if (
          id === 0 ||
          !Number.isSafeInteger(id) ||
          !(await apiKeys.revoke(id, auditSourceOf(set), (key) =>
            keyRevocationRefusal(principalOf(set), key),
          ))
        ) {
          throw notFound('No active API key with this id')
        }
        return { id, revoked: true as const }
      },
      {
        ...revoke.hook,
        detail: {
          tags,
          summary: 'Revoke an API key',
          description:
            'The key, and every key made from it (at any depth), is refused from the next request on. Revoking needs authority over the key: scopes that cover its scopes, being the key that made it (at any depth), or the admin whose credential made it; otherwise 403 FORBIDDEN naming the scopes missing.',
          security: revoke.security,
          responses: documented({
            200: RevokedApiKey,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
}

/**
 * A new key's expiry: the one asked for, but never later than the creating key's own (a key
 * expiring in 3 s must not mint one that never expires). Section 17.
 */
function clampedExpiry(
  asked: string | null,
  principal: Principal | null,
): { expiresAt: string | null; clamped: boolean } {
  const limit = principal?.kind === 'apiKey' ? principal.expiresAt : null
  if (limit === null) return { expiresAt: asked, clamped: false }
  if (asked !== null && Date.parse(asked) <= Date.parse(limit)) {
    return { expiresAt: asked, clamped: false }
  }
  return { expiresAt: limit, clamped: true }
}

/** The admin a new key answers to: the caller itself, or the user the calling key answers to. */
function creatingUser(principal: Principal | null): number | null {
  if (principal === null) return null
  return principal.kind === 'user' ? principal.userId : principal.createdByUser
}

/** An expiry the client gave: a time that lies ahead, as ISO text (422 otherwise). */
function futureTime(text: string, now: number): string {
  const at = Date.parse(text)
  if (Number.isNaN(at) || at <= now) {
    throw validationFailed([fieldDetail('expires_at', 'must be a date-time in the future', text)])
  }
  return new Date(at).toISOString()
}
