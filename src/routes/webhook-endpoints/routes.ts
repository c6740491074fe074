import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { notFound } from '../../errors/errors'
import { noneMatch } from '../../http/conditional'
import { jsonBody } from '../../http/json-body'
import {
  chronologicalListParameters,
  documented,
  errorResponses,
  headerParameters,
} from '../../http/openapi-schemas'
import { DEFAULT_LIMIT, linkHeader, MAX_LIMIT, offsetPageAnswer } from '../../http/pagination'
import { QueryReader } from '../../http/query'
import { publicBaseUrl } from '../../http/request-context'
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../outbound/deliveries'
import { type EndpointRecord, toEndpointView } from '../../outbound/endpoints'
import type { EndpointStore } from '../../outbound/store'
import type { AuthPlugin } from '../auth/plugin'
import { auditSourceOf } from '../auth/principal'
import { guardOf, type Operation } from '../authorisation'
import { etagOf, versionsFromIfMatch } from '../users/etag'
import { IF_MATCH, IF_NONE_MATCH } from '../users/route-docs'
import {
  CreateEndpointBody,
  DEFAULT_OVERLAP_S,
  DeletedEndpoint,
  DeliveryPage,
  DeliveryView,
  EndpointPage,
  EndpointView,
  EndpointWithSecret,
  PatchEndpointBody,
  RotateSecretBody,
} from './schema'

const tags = ['webhook endpoints']

export interface WebhookEndpointRouteInputs {
  auth: AuthPlugin
  endpoints: EndpointStore
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
}

/** A numeric id from the path; a malformed one is answered like a missing record (404). */
function idOf(text: string, what: string): number {
  const id = parseRowId(text)
  if (id === null) throw notFound(`No ${what} with this id`)
  return id
}

const endpointIdOf = (text: string) => idOf(text, 'webhook endpoint')

/**
 * Outbound webhooks (CONTRACT section 16): endpoints that receive the audit log's events,
 * signed (Standard Webhooks), with a delivery log and retries.
 */
export function webhookEndpointRoutes(
  inputs: WebhookEndpointRouteInputs,
  prefix: '' | '/v1' | '/v2',
) {
  const { auth, endpoints, config } = inputs
  const listPath = `${prefix}/webhook-endpoints`
  const guard = (operation: Operation) => guardOf(operation, config.usersAccess)
  const list = guard('GET /webhook-endpoints')
  const create = guard('POST /webhook-endpoints')
  const read = guard('GET /webhook-endpoints/:id')
  const patch = guard('PATCH /webhook-endpoints/:id')
  const remove = guard('DELETE /webhook-endpoints/:id')
  const rotate = guard('POST /webhook-endpoints/:id/rotate-secret')
  const deliveries = guard('GET /webhook-endpoints/:id/deliveries')
  const delivery = guard('GET /webhook-endpoints/:id/deliveries/:deliveryId')
  const retry = guard('POST /webhook-endpoints/:id/deliveries/:deliveryId/retry')

  const answer = (endpoint: EndpointRecord, set: { headers: Record<string, unknown> }) => {
    set.headers.etag = etagOf(endpoint)
    return toEndpointView(endpoint)
  }
  const withSecret = (endpoint: EndpointRecord, set: { headers: Record<string, unknown> }) => ({
    ...answer(endpoint, set),
    secret: endpoint.secret,
  })

  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/webhook-endpoints',
      async ({ request, set }) => {
        const page = await offsetPageAnswer(request, set, {
          path: listPath,
          publicUrl: config.publicUrl,
          usually: 'oldest',
          list: (request) => endpoints.list(request),
        })
        return { data: page.data.map(toEndpointView), pagination: page.pagination }
      },
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'List webhook endpoints',
          description:
            'Oldest first (sort=-created: newest first), paginated like /users (limit, offset, X-Total-Count, Link). Secrets are never listed.',
          security: list.security,
          parameters: chronologicalListParameters('oldest'),
          responses: documented({
            200: EndpointPage,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .post(
      '/webhook-endpoints',
      async ({ body, set }) => {
        const endpoint = await endpoints.create(
          { url: body.url, events: body.events, description: body.description ?? null },
          auditSourceOf(set),
        )
        set.status = 201
        set.headers.location = `${listPath}/${endpoint.id}`
        return withSecret(endpoint, set)
      },
      {
        ...create.hook,
        parse: jsonBody(),
        body: CreateEndpointBody,
        detail: {
          tags,
          summary: 'Create a webhook endpoint',
          description:
            'Answers 201 with Location and the endpoint’s `secret` (whsec_…), shown this once: every delivery is signed with it in the Standard Webhooks scheme (webhook-id, webhook-timestamp, webhook-signature). The endpoint receives the matching events committed after it was made, each POSTed as { type, timestamp, data } (data is the audit event), in order, retried with backoff for --webhook-retry-window (3 days). A URL whose host resolves to anything but a global unicast address (loopback, private, link-local, reserved; an IPv6 form carrying an IPv4 address is judged by it) is refused (422) unless the server runs with --webhook-allow-private. At most 100 endpoints (409 beyond).',
          security: create.security,
          responses: documented({
            201: EndpointWithSecret,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'FORBIDDEN',
              'CONFLICT',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .get(
      '/webhook-endpoints/:id',
      async ({ params, request, set }) => {
        const endpoint = await endpoints.get(endpointIdOf(params.id))
        if (endpoint === null) throw notFound('No webhook endpoint with this id')
        const etag = etagOf(endpoint)
        set.headers.etag = etag
        if (!noneMatch(request.headers.get('if-none-match'), etag)) {
          return new Response(null, { status: 304 })
        }
        return toEndpointView(endpoint)
      },
      {
        ...read.hook,
        detail: {
          tags,
          summary: 'Get a webhook endpoint',
          description:
            'Carries an ETag; If-None-Match with it answers 304. The secret is not shown (rotate it to get a new one).',
          security: read.security,
          ...headerParameters(IF_NONE_MATCH),
          responses: {
            ...documented({
              200: EndpointView,
              ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
            }),
            304: { description: 'Not modified: If-None-Match holds the current ETag' },
          },
        },
      },
    )
    .patch(
      '/webhook-endpoints/:id',
      async ({ params, body, request, set }) => {
        const endpoint = await endpoints.update(
          endpointIdOf(params.id),
          body,
          { versions: versionsFromIfMatch(request.headers.get('if-match'), params.id) },
          auditSourceOf(set),
        )
        return answer(endpoint, set)
      },
      {
        ...patch.hook,
        parse: jsonBody(['application/json', 'application/merge-patch+json']),
        body: PatchEndpointBody,
        detail: {
          tags,
          summary: 'Update a webhook endpoint',
          description:
            'Any of url, events, description (null clears it) and status. `status: "enabled"` turns an endpoint roster disabled back on: its queued deliveries are sent, oldest first (the one that failed stays failed; retry it by hand). Events that came while it was disabled are not queued for it. If-Match that does not match the ETag is 412.',
          security: patch.security,
          ...headerParameters(IF_MATCH),
          responses: documented({
            200: EndpointView,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'FORBIDDEN',
              'NOT_FOUND',
              'PRECONDITION_FAILED',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .delete(
      '/webhook-endpoints/:id',
      async ({ params, request, set }) => {
        const id = endpointIdOf(params.id)
        await endpoints.remove(
          id,
          { versions: versionsFromIfMatch(request.headers.get('if-match'), params.id) },
          auditSourceOf(set),
        )
        return { id, deleted: true as const }
      },
      {
        ...remove.hook,
        detail: {
          tags,
          summary: 'Delete a webhook endpoint',
          description:
            'Its delivery log and queued deliveries go with it; an attempt under way may still arrive. If-Match that does not match is 412.',
          security: remove.security,
          ...headerParameters(IF_MATCH),
          responses: documented({
            200: DeletedEndpoint,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'PRECONDITION_FAILED'),
          }),
        },
      },
    )
    .post(
      '/webhook-endpoints/:id/rotate-secret',
      async ({ params, body, request, set }) => {
        const endpoint = await endpoints.rotateSecret(
          endpointIdOf(params.id),
          (body?.expires_in ?? DEFAULT_OVERLAP_S) * 1000,
          { versions: versionsFromIfMatch(request.headers.get('if-match'), params.id) },
          auditSourceOf(set),
        )
        return withSecret(endpoint, set)
      },
      {
        ...rotate.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: RotateSecretBody,
        detail: {
          tags,
          summary: 'Rotate a webhook endpoint’s secret',
          description:
            'Answers the endpoint with its new `secret`, shown this once. For `expires_in` seconds (24 hours unless given, 0 for none) every delivery carries two signatures in webhook-signature, one per secret, so a receiver holding either verifies while it switches.',
          security: rotate.security,
          ...headerParameters(IF_MATCH),
          responses: documented({
            200: EndpointWithSecret,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'FORBIDDEN',
              'NOT_FOUND',
              'PRECONDITION_FAILED',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .get(
      '/webhook-endpoints/:id/deliveries',
      async ({ params, request, set }) => {
        const endpointId = endpointIdOf(params.id)
        const query = new QueryReader(request.url)
        const limit = query.integer('limit', { min: 1, max: MAX_LIMIT, fallback: DEFAULT_LIMIT })
        const cursor = query.string('cursor', { maxLength: 20 })
        const before = cursor === undefined ? null : parseRowId(cursor)
        if (cursor !== undefined && before === null) {
          query.reject('cursor', 'must be a next_cursor this list gave', cursor)
        }
        const status = query.string('status', { maxLength: 20 })
        if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status)) {
          query.reject('status', `must be one of ${DELIVERY_STATUSES.join(', ')}`, status)
        }
        query.assertValid()
        if ((await endpoints.get(endpointId)) === null) {
          throw notFound('No webhook endpoint with this id')
        }
        const page = await endpoints.deliveries(endpointId, {
          limit,
          before,
          status: status as DeliveryStatus | undefined,
        })
        const nextCursor = page.next === null ? null : String(page.next)
        set.headers.link = linkHeader({
          base: publicBaseUrl(request, config.publicUrl),
          path: `${listPath}/${endpointId}/deliveries`,
          limit,
          targets: nextCursor === null ? {} : { next: { cursor: nextCursor } },
          keep: { status },
        })
        return { data: page.data, pagination: { limit, next_cursor: nextCursor } }
      },
      {
        ...deliveries.hook,
        detail: {
          tags,
          summary: 'An endpoint’s delivery log',
          description:
            'Newest first, by `cursor` (`pagination.next_cursor` and the Link header). Each delivery: its event, status (pending, delivered, failed), attempts, the last answer’s status and first 1 KiB, the last error, and the payload sent. Kept as long as audit events (--audit-retention).',
          security: deliveries.security,
          parameters: [
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
            },
            { name: 'cursor', in: 'query', schema: { type: 'string' } },
            {
              name: 'status',
              in: 'query',
              schema: { type: 'string', enum: [...DELIVERY_STATUSES] },
            },
          ],
          responses: documented({
            200: DeliveryPage,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .get(
      '/webhook-endpoints/:id/deliveries/:deliveryId',
      async ({ params }) => {
        const found = await endpoints.delivery(
          endpointIdOf(params.id),
          idOf(params.deliveryId, 'delivery'),
        )
        if (found === null) throw notFound('No delivery with this id for this endpoint')
        return found
      },
      {
        ...delivery.hook,
        detail: {
          tags,
          summary: 'One delivery',
          description:
            'A delivery of the log, with its payload and its last attempt’s outcome; 404 once purged (--audit-retention).',
          security: delivery.security,
          responses: documented({
            200: DeliveryView,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .post(
      '/webhook-endpoints/:id/deliveries/:deliveryId/retry',
      async ({ params, set }) =>
        endpoints.retryDelivery(
          endpointIdOf(params.id),
          idOf(params.deliveryId, 'delivery'),
          auditSourceOf(set),
        ),
      {
        ...retry.hook,
        detail: {
          tags,
          summary: 'Send a delivery again',
          description:
            'Makes it pending and due now, with a fresh retry window, whatever its status: a failed one is tried again, a delivered one is sent again (same webhook-id, so a receiver that keeps ids drops it). It goes in its place in the endpoint’s order: before the endpoint’s later pending deliveries. An endpoint that is disabled sends it once enabled.',
          security: retry.security,
          responses: documented({
            200: DeliveryView,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
}
