import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { UserView } from '../users/schema'

/** What every sign-in answers (POST /login, a magic link, a passkey, an mfa_token's code). */
export const LoginAnswer = t.Object({
  user: UserView,
  access_token: t.String(),
  token_type: t.Literal('Bearer'),
  expires_in: Type.Integer({ examples: [3600] }),
})

export const MfaRequiredAnswer = t.Object(
  {
    mfa_required: t.Literal(true),
    mfa_token: t.String({ description: 'For POST /auth/mfa/verify, within 5 minutes' }),
  },
  { description: 'The password was right; the account’s second factor is still to come' },
)
