import { FormatRegistry, Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { isValidDescription, MAX_DESCRIPTION_LENGTH } from '../../groups/records'
import { offsetPageOf } from '../../http/openapi-schemas'

FormatRegistry.Set('group-description', isValidDescription)

const Name = t.String({
  format: 'user-name',
  description:
    '1–200 characters after trimming, no control, bidirectional or invisible characters; unique without regard to case.',
  error:
    'must be 1–200 characters after trimming, with no control characters, bidirectional controls or invisible characters',
  examples: ['Engineering'],
})

const Description = t.Union([t.String({ format: 'group-description' }), t.Null()], {
  error: `must be at most ${MAX_DESCRIPTION_LENGTH} characters, without control characters (line breaks and tabs aside), bidirectional controls or invisible characters, or null`,
  description: `At most ${MAX_DESCRIPTION_LENGTH} characters, or null.`,
})

export const CreateGroupBody = t.Object(
  { name: Name, description: t.Optional(Description) },
  { additionalProperties: false },
)

/** PUT replaces name and description; the read-only fields may be echoed back if they match. */
export const ReplaceGroupBody = t.Object(
  {
    name: Name,
    description: t.Optional(Description),
    id: t.Optional(Type.Integer({ description: 'Ignored when it matches the group.' })),
    members: t.Optional(
      t.Array(Type.Integer(), {
        description: 'Ignored: membership changes through /groups/{id}/members/{userId}.',
      }),
    ),
    created_at: t.Optional(t.String({ description: 'Ignored when it matches the group.' })),
    updated_at: t.Optional(t.String({ description: 'Ignored when it matches the group.' })),
  },
  { additionalProperties: false },
)

export const PatchGroupBody = t.Object(
  { name: t.Optional(Name), description: t.Optional(Description) },
  {
    additionalProperties: false,
    minProperties: 1,
    error: 'must contain at least one of name, description',
  },
)

export const GroupView = t.Object(
  {
    id: Type.Integer({ minimum: 1, examples: [1] }),
    name: t.String({ examples: ['Engineering'] }),
    description: t.Union([t.String(), t.Null()]),
    members: t.Array(Type.Integer({ minimum: 1 }), {
      description: 'The ids of the users in the group, in id order.',
    }),
    created_at: t.String({ format: 'date-time' }),
    updated_at: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const GroupPage = offsetPageOf(GroupView)

export const DeletedGroup = t.Object({ id: Type.Integer(), deleted: t.Literal(true) })
