import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { SCOPES } from '../../auth/access'
import { offsetPageOf } from '../../http/openapi-schemas'

export const DataAnswer = t.Object({
  data: t.Object({
    users: Type.Integer({ minimum: 0 }),
    uploads: Type.Integer({ minimum: 0 }),
    webhook_events: Type.Integer({ minimum: 0 }),
  }),
  key: t.Union([t.Object({ id: Type.Integer(), name: t.String() }), t.Null()], {
    description: 'The API key that asked; null when an admin asked with its own credential.',
  }),
})

const Grant = t.Union([...SCOPES.map((scope) => t.Literal(scope)), t.Literal('*')], {
  description: 'A scope, or * for every scope.',
})

const Scopes = t.Array(Grant, {
  minItems: 1,
  uniqueItems: true,
  error: `must be a non-empty list of distinct scopes: ${SCOPES.join(', ')} or *`,
  description:
    'What the key may do (see "Who may do what" in docs/sign-in.md). `users:write` includes `users:read`, and likewise for uploads and webhooks.',
})

const ExpiresAt = t.Union([t.String({ format: 'date-time' }), t.Null()], {
  description: 'When the key stops working (then it is refused like a revoked one); null: never.',
})

const KeyName = t.String({
  format: 'user-name',
  error:
    'must be 1–200 characters after trimming, with no control characters, bidirectional controls or invisible characters',
})

export const CreateApiKeyBody = t.Object(
  {
    name: KeyName,
    scopes: t.Optional({
      ...Scopes,
      description: `${Scopes.description} At most the scopes of the caller; when left out, the caller's.`,
    }),
    expires_at: t.Optional({
      ...t.String({ format: 'date-time' }),
      error: 'must be an RFC 3339 date-time in the future',
      description: 'When the key stops working; leave out for a key that does not expire.',
    }),
    current_password: t.Optional(
      t.String({
        maxLength: 1024,
        error: 'must be at most 1024 characters',
        description:
          'With a user’s session or token signed in more than 5 minutes ago: its current password (a new key is a new credential). Not read from a key.',
      }),
    ),
  },
  { additionalProperties: false },
)

const CreatedByUser = t.Union([Type.Integer(), t.Null()], {
  description:
    'The admin whose session or token made this key (directly, or through the key that made it): the key works only while that user is an active admin. null: made on the command line, or by a key made there.',
})

export const ApiKeyView = t.Object({
  id: Type.Integer(),
  name: t.String(),
  prefix: t.String({ description: 'The first characters of the key, to tell keys apart.' }),
  created_at: t.String({ format: 'date-time' }),
  last_used_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
    description: 'Recorded to the minute.',
  }),
  parent_id: t.Union([Type.Integer(), t.Null()], {
    description:
      'The key that made this one through the API (revoking it revokes this one); null when made on the command line or by an admin.',
  }),
  created_by_user: CreatedByUser,
  scopes: Scopes,
  expires_at: ExpiresAt,
})

export const CreatedApiKey = t.Object({
  id: Type.Integer(),
  name: t.String(),
  prefix: t.String(),
  key: t.String({ description: 'Shown only in this answer: store it now.' }),
  created_at: t.String({ format: 'date-time' }),
  parent_id: t.Union([Type.Integer(), t.Null()]),
  created_by_user: CreatedByUser,
  scopes: Scopes,
  expires_at: ExpiresAt,
  expires_at_clamped: t.Boolean({
    description:
      'true when expires_at was moved earlier to the creating key’s own expiry (a key never outlives the key that made it); the answer’s expires_at is the one that holds.',
  }),
})

export const ApiKeyPage = offsetPageOf(ApiKeyView)

export const RevokedApiKey = t.Object({ id: Type.Integer(), revoked: t.Literal(true) })
