import { FormatRegistry, Type } from '@sinclair/typebox'
import { type Static, t } from 'elysia'
import { offsetPageOf, PageLimit } from '../../http/openapi-schemas'
import {
  FIELD_RULES,
  isValidEmail,
  isValidName,
  isValidUsername,
  MAX_CURRENT_PASSWORD_LENGTH,
  MAX_EMAIL_LENGTH,
  MAX_NAME_LENGTH,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
} from '../../users/fields'

/**
 * The name rule (users/fields.ts) as a TypeBox format, checked in the same pass as every other
 * field, so a bad name is reported together with the rest.
 */
FormatRegistry.Set('user-name', isValidName)
FormatRegistry.Set('username', isValidUsername)

/**
 * Puts roster's `email` format check back. @elysiajs/openapi (through @sinclair/typemap)
 * replaces TypeBox's `email` format when it loads with one that builds a zod schema on every
 * call: 14 µs per email, the largest cost of validating a user, and zod's rules besides.
 * TypeBox looks formats up when it checks, so calling this once everything is loaded is enough.
 */
export function registerEmailFormat(): void {
  FormatRegistry.Set('email', isValidEmail)
}

registerEmailFormat()

const Name = t.String({
  format: 'user-name',
  description: `1–${MAX_NAME_LENGTH} characters after trimming, no control characters, bidirectional controls or invisible characters; stored trimmed.`,
  error: FIELD_RULES.name,
  examples: ['Ada Lovelace'],
})

const Username = t.String({
  format: 'username',
  error: FIELD_RULES.username,
  description:
    'What the user may sign in with besides its email (SCIM’s userName); unique without regard to case. The email when not given at creation.',
  examples: ['ada'],
})

export const EmailFormat = t.String({
  format: 'email',
  maxLength: MAX_EMAIL_LENGTH,
  error: FIELD_RULES.email,
  examples: ['ada@example.com'],
})

export const Password = t.String({
  minLength: MIN_PASSWORD_LENGTH,
  maxLength: MAX_PASSWORD_LENGTH,
  error: FIELD_RULES.password,
  description: 'Write-only: stored as an argon2id hash, never returned.',
})

export const CurrentPassword = t.String({
  maxLength: MAX_CURRENT_PASSWORD_LENGTH,
  error: FIELD_RULES.current_password,
  description:
    'Write-only. The account’s current password: needed, with the account’s own credential, to change its password or email.',
})

const ActiveField = t.Boolean({
  description:
    'False: the account may not sign in, and its sessions and tokens end at once (SCIM’s active). Changed only by an admin or a key with users:write.',
})

const RoleField = t.Union([t.Literal('member'), t.Literal('admin')], {
  error: 'must be member or admin',
  description:
    'member (the default) or admin. Only an admin or an API key with users:write gives or changes a role; the last admin cannot be demoted.',
})

export const CreateUserBody = t.Object(
  {
    name: Name,
    email: EmailFormat,
    username: t.Optional(Username),
    password: t.Optional(Password),
    role: t.Optional(RoleField),
    active: t.Optional(ActiveField),
  },
  { additionalProperties: false },
)

/** PUT replaces name and email; the read-only fields may be echoed back if they match. */
export const ReplaceUserBody = t.Object(
  {
    name: Name,
    email: EmailFormat,
    username: t.Optional(Username),
    password: t.Optional(Password),
    current_password: t.Optional(CurrentPassword),
    role: t.Optional(RoleField),
    active: t.Optional(ActiveField),
    groups: t.Optional(
      t.Array(Type.Integer(), {
        description: 'Ignored: memberships change through /groups/{id}/members/{userId}.',
      }),
    ),
    email_verified_at: t.Optional(
      t.Union([t.String(), t.Null()], {
        description: 'Ignored: an address is verified by following the link mailed to it.',
      }),
    ),
    id: t.Optional(Type.Integer({ description: 'Ignored when it matches the record.' })),
    created_at: t.Optional(t.String({ description: 'Ignored when it matches the record.' })),
    updated_at: t.Optional(t.String({ description: 'Ignored when it matches the record.' })),
  },
  { additionalProperties: false },
)

export const PatchUserBody = t.Object(
  {
    name: t.Optional(Name),
    email: t.Optional(EmailFormat),
    username: t.Optional(Username),
    password: t.Optional(Password),
    current_password: t.Optional(CurrentPassword),
    role: t.Optional(RoleField),
    active: t.Optional(ActiveField),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    error: 'must contain at least one of name, email, username, password, role, active',
  },
)

export const UserView = t.Object(
  {
    id: Type.Integer({ minimum: 1, examples: [1] }),
    name: t.String({ examples: ['Ada Lovelace'] }),
    email: t.String({ examples: ['ada@example.com'] }),
    username: t.String({
      examples: ['ada'],
      description: 'What the user may sign in with besides its email; the email unless set.',
    }),
    active: t.Boolean({
      description:
        'False: the account is deactivated (PATCH with active, or SCIM) and may not sign in.',
    }),
    created_at: t.String({ format: 'date-time' }),
    updated_at: t.String({ format: 'date-time' }),
    role: t.Union([t.Literal('member'), t.Literal('admin')]),
    email_verified_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
      description:
        'When the user followed a verification link mailed to `email` (POST /auth/verify-email/request); null until then, and again after the address changes.',
    }),
    groups: t.Array(Type.Integer({ minimum: 1 }), {
      description: 'The ids of the groups the user is in, in id order (see /groups).',
    }),
  },
  { additionalProperties: false },
)

export const UserPage = offsetPageOf(UserView)

export const UserPageV2 = t.Object({
  data: t.Array(UserView),
  pagination: t.Object({
    limit: PageLimit,
    offset: t.Union([Type.Integer({ minimum: 0 }), t.Null()], {
      description: 'null on a page chosen by cursor',
    }),
    total: t.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'The matching records (all users when unfiltered: a count kept with every insert and delete, not counted per request; filtered: counted through the search index, at the cost of the matches). Absent with count=none.',
      }),
    ),
    next_cursor: t.Union([t.String(), t.Null()], {
      description:
        'Pass as `cursor` (with the same limit and filters) for the next page; null on the last page.',
    }),
  }),
})

export const DeletedUser = t.Object({ id: Type.Integer(), deleted: t.Literal(true) })

export type CreateUserInput = Static<typeof CreateUserBody>
export type ReplaceUserInput = Static<typeof ReplaceUserBody>
export type PatchUserInput = Static<typeof PatchUserBody>
export type User = Static<typeof UserView>
