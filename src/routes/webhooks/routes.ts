import { type DocumentDecoration, Elysia } from 'elysia'
import type { Config } from '../../config'
import { fieldDetail } from '../../errors/details'
import { badRequest, conflict, notFound, validationFailed } from '../../errors/errors'
import { hasControlCharacter } from '../../http/control-characters'
import { MAX_JSON_BYTES, readBytes } from '../../http/json-body'
import { chronologicalListParameters, documented, errorResponses } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import type { QueryReader } from '../../http/query'
import { EVENT_STATUSES, type EventStatus, type WebhookInbox } from '../../webhooks/inbox'
import { claimedScheme, type Verified, verifySignature } from '../../webhooks/signature'
import type { AuthPlugin } from '../auth/plugin'
import { guardOf } from '../authorisation'
import { EventPage, EventView, Received } from './schema'

const tags = ['webhooks']
const utf8 = new TextDecoder('utf-8', { fatal: true })
const MAX_EVENT_ID = 255

/** POST /webhooks (and /webhook), GET /webhooks/events, under one prefix. */
/** What the webhook routes are given by the composition root. */
export interface WebhookRouteInputs {
  auth: AuthPlugin
  inbox: Pick<WebhookInbox, 'record' | 'list' | 'retry'>
  /** Tells the worker something new may be due. */
  wakeWorker: () => void
  /** Counts a delivery for the metrics, by scheme and what became of it. */
  countEvent: (scheme: string, status: string) => void
  clock: () => number
  config: Pick<Config, 'publicUrl' | 'webhookSecrets' | 'usersAccess'>
}

export function webhookRoutes(inputs: WebhookRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, inbox, wakeWorker, countEvent, clock, config } = inputs
  const events = guardOf('GET /webhooks/events', config.usersAccess)
  const retry = guardOf('POST /webhooks/events/:id/retry', config.usersAccess)
  const nowSeconds = () => clock() / 1000
  const listPath = `${prefix}/webhooks/events`

  const receive = async ({ request }: { request: Request }) => {
    const raw = await readBytes(request, MAX_JSON_BYTES)
    let verified: Verified
    try {
      verified = verifySignature(request.headers, raw, config.webhookSecrets, nowSeconds())
    } catch (error) {
      countEvent(claimedScheme(request.headers), 'rejected')
      throw error
    }
    let event: ReturnType<typeof parseEvent>
    try {
      event = parseEvent(raw, verified)
    } catch (error) {
      countEvent(verified.scheme, 'rejected')
      throw error
    }
    if (await inbox.record(event)) {
      countEvent(verified.scheme, 'received')
      wakeWorker()
    } else {
      countEvent(verified.scheme, 'duplicate')
    }
    return { received: true as const }
  }
  const receiveDocs: DocumentDecoration = {
    tags,
    summary: 'Receive a signed webhook delivery',
    description:
      'Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature), Stripe (Stripe-Signature) or GitHub-style (X-Hub-Signature-256 / X-Signature: sha256=…), verified over the raw bytes with ROSTER_WEBHOOK_SECRET before anything is parsed. The event is stored and answered at once; it is handled afterwards, once per event id.',
    requestBody: {
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['type', 'data'],
            properties: {
              id: { type: 'string' },
              type: { type: 'string' },
              data: {
                type: 'object',
                required: ['object'],
                properties: { object: { type: 'object' } },
              },
            },
          },
        },
      },
    },
    responses: documented({
      200: Received,
      ...errorResponses(
        'BAD_REQUEST',
        'INVALID_SIGNATURE',
        'PAYLOAD_TOO_LARGE',
        'VALIDATION_ERROR',
      ),
    }),
  }

  return new Elysia({ prefix })
    .use(auth)
    .post('/webhooks', receive, { parse: 'none', detail: receiveDocs })
    .post('/webhook', receive, {
      parse: 'none',
      detail: { ...receiveDocs, summary: 'Receive a signed webhook delivery (alias)' },
    })
    .get(
      '/webhooks/events',
      ({ request, set }) =>
        offsetPageAnswer(request, set, {
          path: listPath,
          publicUrl: config.publicUrl,
          filters: (query) => ({ status: readStatusFilter(query) }),
          usually: 'newest',
          list: (page, { status }) => inbox.list(page, status),
        }),
      {
        ...events.hook,
        detail: {
          tags,
          summary: 'Stored webhook events',
          description:
            'Newest first (sort=created: oldest first), paginated like /users. `status` (pending, processed, ignored or failed) keeps only the events in that state; `pagination.total` then counts only those.',
          security: events.security,
          parameters: [
            ...chronologicalListParameters('newest'),
            { name: 'status', in: 'query', schema: { type: 'string', enum: [...EVENT_STATUSES] } },
          ],
          responses: documented({
            200: EventPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .post(
      '/webhooks/events/:id/retry',
      async ({ params, set }) => {
        const id = eventIdFromPath(params.id)
        const outcome = id === null ? 'missing' : await inbox.retry(id)
        if (outcome === 'missing') throw notFound('No webhook event with this id')
        if (outcome === 'not-failed') {
          throw conflict('Only a failed event can be retried; this one has not failed')
        }
        wakeWorker()
        set.status = 202
        return outcome
      },
      {
        ...retry.hook,
        detail: {
          tags,
          summary: 'Retry a failed webhook event (webhooks:write)',
          description:
            'Schedules a failed event for another attempt now, also one that has used up its retries; 202 with the event as it stands (the attempt runs right after). 409 when the event is pending, processed or ignored. The id is the one GET /webhooks/events shows.',
          security: retry.security,
          responses: documented({
            202: EventView,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT'),
          }),
        },
      },
    )
}

/**
 * The event id from the path (Elysia has decoded it; a malformed escape such as `%E0%A4%A`
 * arrives as null, whatever the type says), or null when it cannot be one.
 */
function eventIdFromPath(id: string | null): string | null {
  return typeof id !== 'string' || id === '' || id.length > MAX_EVENT_ID || hasControlCharacter(id)
    ? null
    : id
}

/**
 * After the signature: the body must be UTF-8 JSON (else 400) shaped `{type: string, data:
 * {object: object}}` (else 422). The event id, per scheme: webhook-id; the body's id (Stripe);
 * X-GitHub-Delivery, else the body's id, else the body's SHA-256 (sha256=).
 */
function parseEvent(raw: Uint8Array, verified: Verified) {
  let payload: string
  let body: unknown
  try {
    payload = utf8.decode(raw)
    body = JSON.parse(payload)
  } catch {
    throw badRequest('The signature is valid but the body is not JSON')
  }
  const problems = []
  const event = (
    body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}
  ) as Record<string, unknown>
  if (event !== body) problems.push(fieldDetail('body', 'must be a JSON object', body))
  else {
    if (
      typeof event.type !== 'string' ||
      event.type === '' ||
      event.type.length > 200 ||
      hasControlCharacter(event.type)
    ) {
      problems.push(
        fieldDetail(
          'type',
          'must be a string of 1–200 characters, none a control character',
          event.type,
        ),
      )
    }
    const data = event.data as Record<string, unknown> | undefined
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      problems.push(fieldDetail('data', 'must be an object with an object in data.object', data))
    } else if (
      data.object === null ||
      typeof data.object !== 'object' ||
      Array.isArray(data.object)
    ) {
      problems.push(fieldDetail('data.object', 'must be an object', data.object))
    }
  }
  const bodyId =
    typeof event.id === 'string' || typeof event.id === 'number' ? String(event.id) : null
  // sha256=: no timestamp is signed, so the body's hash also deduplicates (see the inbox).
  const bodySha256 = verified.scheme === 'sha256' ? Bun.SHA256.hash(raw, 'hex') : null
  let eventId: string | null
  if (verified.scheme === 'standard') eventId = verified.headerEventId
  else if (verified.scheme === 'stripe') eventId = bodyId
  else eventId = verified.headerEventId ?? bodyId ?? bodySha256
  if (
    eventId === null ||
    eventId === '' ||
    eventId.length > MAX_EVENT_ID ||
    hasControlCharacter(eventId)
  ) {
    problems.push(
      fieldDetail(
        'id',
        'must be the event id (a string of 1–255 characters, none a control character)',
        event.id,
      ),
    )
  }
  if (problems.length > 0) throw validationFailed(problems)
  return {
    eventId: eventId as string,
    scheme: verified.scheme,
    type: event.type as string,
    payload,
    bodySha256,
  }
}

/** `status`: one of the event states, or absent for every event. */
function readStatusFilter(query: QueryReader): EventStatus | undefined {
  return query.has('status') ? query.oneOf('status', EVENT_STATUSES, 'pending') : undefined
}
