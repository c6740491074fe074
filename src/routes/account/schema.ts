import { t } from 'elysia'
import { CurrentPassword, EmailFormat, Password, UserView } from '../users/schema'

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
  {
    // Said outright: Elysia refuses unknown fields unless told (a form's named button).
    additionalProperties: true,
    description: 'The identifier is the user’s email. Other fields are ignored.',
  },
)

export { LoginAnswer, MfaRequiredAnswer } from '../auth/sign-in-schema'

export const SecureAnswer = t.Object({ authenticated: t.Literal(true), user: UserView })

/** A token from a link roster mailed: `rat_` and 43 characters; anything longer is not one. */
const Token = t.String({
  minLength: 1,
  maxLength: 128,
  error: 'must be the token from the link (rat_…)',
  description: 'The `token` of the link in the message (`…?token=rat_…`).',
})

export const EmailRequest = t.Object(
  { email: EmailFormat },
  {
    additionalProperties: false,
    error: 'must be { "email": … }',
    description: 'The address of the account.',
  },
)

export const VerificationRequest = t.Object(
  { email: t.Optional(EmailFormat) },
  {
    additionalProperties: false,
    error: 'must be empty, or { "email": … }',
    description:
      'No body (or `{}`) for the signed-in user; `{ email }` for an account that cannot sign in before it is verified (--require-verified-email).',
  },
)

// Every body schema has an `error` of its own: without one, Elysia writes the whole rejected
// body into its message with JSON.stringify, which a deeply nested body overflows (a 500).
export const TokenConfirmation = t.Object(
  { token: Token },
  { additionalProperties: false, error: 'must be { "token": … }' },
)

export const PasswordResetConfirmation = t.Object(
  { token: Token, password: Password },
  { additionalProperties: false, error: 'must be { "token": …, "password": … }' },
)

export const Accepted = t.Object({
  message: t.String({
    examples: ['If the address belongs to an account, a message is on its way.'],
  }),
})

/**
 * `{ token }` or `{ email, code }`: one object with optional fields (the handler checks which
 * pair came), not a union, whose error path reads the whole body (a deeply nested one
 * overflowed the stack).
 */
export const MagicLinkConfirmation = t.Object(
  {
    token: t.Optional(Token),
    email: t.Optional(EmailFormat),
    code: t.Optional(
      t.String({ pattern: '^[0-9]{6}$', error: 'must be the 6-digit code from the message' }),
    ),
  },
  {
    additionalProperties: false,
    error: 'must be { "token": … } or { "email": …, "code": … }',
    description:
      '`{ token }` from the link, or `{ email, code }` with the 6-digit code from the message.',
  },
)

export const EmailChangeRequest = t.Object(
  { new_email: EmailFormat, current_password: t.Optional(CurrentPassword) },
  {
    additionalProperties: false,
    error: 'must be { "new_email": …, "current_password": … }',
    description:
      'The address the account should move to, and the account’s current password (an account without one: a sign-in within the last 5 minutes instead).',
  },
)

export const InvitationConfirmation = PasswordResetConfirmation
