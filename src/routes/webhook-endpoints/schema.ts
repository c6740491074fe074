import { FormatRegistry, Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { ACTION_KINDS, AUDIT_ACTIONS } from '../../audit/events'
import { isValidDescription } from '../../groups/records'
import { OffsetPagination, PageLimit } from '../../http/openapi-schemas'
import { DELIVERY_STATUSES } from '../../outbound/deliveries'
import {
  ENDPOINT_STATUSES,
  MAX_ENDPOINT_DESCRIPTION,
  MAX_EVENT_PATTERNS,
  MAX_URL_LENGTH,
} from '../../outbound/endpoints'
import { AuditEventView } from '../audit/schema'

FormatRegistry.Set(
  'endpoint-description',
  (value) => isValidDescription(value) && [...value].length <= MAX_ENDPOINT_DESCRIPTION,
)

/** Every pattern an endpoint may subscribe with, for the document's enum. */
const EVENT_PATTERNS = ['*', ...ACTION_KINDS.map((kind) => `${kind}.*`), ...AUDIT_ACTIONS]

const Url = t.String({
  maxLength: MAX_URL_LENGTH,
  error: `must be an http:// or https:// URL of at most ${MAX_URL_LENGTH} characters`,
  description:
    'Where deliveries are POSTed: http:// or https://, no user name or password, no #fragment. Its host must resolve to global unicast addresses (unless the server runs with --webhook-allow-private), checked now and at every delivery.',
  examples: ['https://hooks.example.com/roster'],
})

const Events = t.Array(
  t.String({
    enum: EVENT_PATTERNS,
    description: 'An action (user.created), a kind of action (user.*) or everything (*)',
  }),
  {
    minItems: 1,
    maxItems: MAX_EVENT_PATTERNS,
    error: `must be a list of 1 to ${MAX_EVENT_PATTERNS} actions (user.created), kinds (user.*) or *`,
    description: 'The audit events this endpoint receives.',
    examples: [['user.created', 'user.deleted'], ['user.*', 'group.*'], ['*']],
  },
)

const Description = t.Union([t.String({ format: 'endpoint-description' }), t.Null()], {
  error: `must be at most ${MAX_ENDPOINT_DESCRIPTION} characters, without control characters (line breaks and tabs aside), bidirectional controls or invisible characters, or null`,
  description: `At most ${MAX_ENDPOINT_DESCRIPTION} characters, or null.`,
})

const Status = t.Union(
  ENDPOINT_STATUSES.map((status) => t.Literal(status)),
  {
    description:
      'enabled: events are queued and sent. disabled (by hand, or by roster after a delivery failed for the whole retry window): nothing new is queued; what was queued waits, and is sent once it is enabled again.',
  },
)

// Each body schema carries an `error` of its own: without one, Elysia's message walks the
// whole body, and a deeply nested one overflows the stack (test/http/deep-bodies.test.ts).
export const CreateEndpointBody = t.Object(
  { url: Url, events: Events, description: t.Optional(Description) },
  {
    additionalProperties: false,
    error: 'must be an object with url, events and an optional description, and nothing else',
  },
)

export const PatchEndpointBody = t.Object(
  {
    url: t.Optional(Url),
    events: t.Optional(Events),
    description: t.Optional(Description),
    status: t.Optional(Status),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    error: 'must contain at least one of url, events, description, status',
  },
)

/** The most an old secret keeps signing after a rotation: a week. */
export const MAX_OVERLAP_S = 7 * 24 * 60 * 60
export const DEFAULT_OVERLAP_S = 24 * 60 * 60

export const RotateSecretBody = t.Object(
  {
    expires_in: t.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_OVERLAP_S,
        description:
          'Seconds the old secret keeps signing beside the new one (24 hours unless given; 0 ends it at once).',
      }),
    ),
  },
  {
    additionalProperties: false,
    error: `must be an object with an optional expires_in (0 to ${MAX_OVERLAP_S} seconds), and nothing else`,
  },
)

export const EndpointView = t.Object(
  {
    id: Type.Integer({ minimum: 1, examples: [1], readOnly: true }),
    url: t.String(),
    description: t.Union([t.String(), t.Null()]),
    events: t.Array(t.String()),
    status: Status,
    disabled_reason: t.Union([t.String(), t.Null()], {
      description: 'Why it is disabled; null while enabled.',
    }),
    previous_secret_expires_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
      description: 'After a rotation, until when the old secret signs beside the new one.',
    }),
    created_at: t.String({ format: 'date-time', readOnly: true }),
    updated_at: t.String({ format: 'date-time', readOnly: true }),
  },
  { additionalProperties: false },
)

/** An endpoint with its secret: the answers of a creation and a rotation, the only ones. */
export const EndpointWithSecret = t.Object(
  {
    ...EndpointView.properties,
    secret: t.String({
      description:
        'whsec_ and base64: the key that signs deliveries (Standard Webhooks). Shown only here; store it now.',
    }),
  },
  { additionalProperties: false },
)

export const EndpointPage = t.Object({ data: t.Array(EndpointView), pagination: OffsetPagination })

export const DeletedEndpoint = t.Object({ id: Type.Integer(), deleted: t.Literal(true) })

export const DeliveryView = t.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    endpoint_id: Type.Integer({ minimum: 1 }),
    event_id: t.String({ description: 'The event’s id, sent as webhook-id on every attempt' }),
    type: t.String({ description: 'The event’s action' }),
    status: t.Union(DELIVERY_STATUSES.map((status) => t.Literal(status))),
    attempts: Type.Integer({ minimum: 0 }),
    next_attempt_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    last_attempt_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    delivered_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    response_status: t.Union([Type.Integer(), t.Null()], {
      description: 'The receiver’s HTTP status at the last attempt; null when it gave none',
    }),
    response_body: t.Union([t.String(), t.Null()], {
      description: 'The start of the receiver’s answer at the last attempt (at most 1 KiB)',
    }),
    last_error: t.Union([t.String(), t.Null()]),
    duration_ms: t.Union([Type.Integer(), t.Null()]),
    created_at: t.String({ format: 'date-time' }),
    payload: t.Object(
      { type: t.String(), timestamp: t.String({ format: 'date-time' }), data: AuditEventView },
      { description: 'The body sent: { type, timestamp, data } with the audit event as data' },
    ),
  },
  { additionalProperties: false },
)

export const DeliveryPage = t.Object({
  data: t.Array(DeliveryView),
  pagination: t.Object({
    limit: PageLimit,
    next_cursor: t.Union([t.String(), t.Null()], {
      description: 'Pass as `cursor` for the next (older) page; null on the last',
    }),
  }),
})
