import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { offsetPageOf } from '../http/openapi-schemas'
import { UserView } from '../users/schema'

const Identifier = t.String({
  maxLength: 254,
  error: 'must be an email address of at most 254 characters',
})
const Secret = t.String({ maxLength: 1024, error: 'must be at most 1024 characters' })

/**
 * Sign-in fields. The identifier may be sent as email, username or login, the secret as
 * password or pass (as the seed interface's clients do). Other fields are ignored: browsers
 * send submit buttons and the like.
 */
export const LoginBody = t.Object(
  {
    email: t.Optional(Identifier),
    username: t.Optional(Identifier),
    login: t.Optional(Identifier),
    password: t.Optional(Secret),
    pass: t.Optional(Secret),
  },
  { description: 'The identifier is the user’s email.' },
)

export const LoginAnswer = t.Object({
  user: UserView,
  access_token: t.String(),
  token_type: t.Literal('Bearer'),
  expires_in: Type.Integer({ examples: [3600] }),
})

export const SecureAnswer = t.Object({ authenticated: t.Literal(true), user: UserView })

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
  error: 'must be 1–200 characters after trimming, with no control characters',
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
