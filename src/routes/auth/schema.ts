import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { offsetPageOf } from '../../http/openapi-schemas'

export const DataAnswer = t.Object({
  data: t.Object({
    users: Type.Integer({ minimum: 0 }),
    uploads: Type.Integer({ minimum: 0 }),
    webhook_events: Type.Integer({ minimum: 0 }),
  }),
  key: t.Object({ id: Type.Integer(), name: t.String() }),
})

const KeyName = t.String({
  format: 'user-name',
  error:
    'must be 1–200 characters after trimming, with no control characters, bidirectional controls or invisible characters',
})

export const CreateApiKeyBody = t.Object({ name: KeyName }, { additionalProperties: false })

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
      'The key that made this one through the API (revoking it revokes this one); null when made on the command line.',
  }),
})

export const CreatedApiKey = t.Object({
  id: Type.Integer(),
  name: t.String(),
  prefix: t.String(),
  key: t.String({ description: 'Shown only in this answer: store it now.' }),
  created_at: t.String({ format: 'date-time' }),
})

export const ApiKeyPage = offsetPageOf(ApiKeyView)

export const RevokedApiKey = t.Object({ id: Type.Integer(), revoked: t.Literal(true) })
