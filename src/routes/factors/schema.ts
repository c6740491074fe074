import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

const CurrentPassword = t.String({ maxLength: 1024, error: 'must be at most 1024 characters' })

/** A step-up's proof, when the sign-in is older than 5 minutes. */
export const StepUpBody = t.Object(
  { current_password: t.Optional(CurrentPassword) },
  {
    error: 'must be a JSON object, with current_password when the sign-in is older than 5 minutes',
    description:
      'Needed only when the caller signed in more than 5 minutes ago: the account’s current password.',
  },
)

/** Base64url text (what WebAuthn's JSON carries binary values as), 1 to `max` characters. */
const Base64Url = (error: string, max: number) =>
  t.String({ minLength: 1, maxLength: max, pattern: '^[A-Za-z0-9_-]+={0,2}$', error })

/**
 * A WebAuthn credential as `PublicKeyCredential.toJSON()` gives it (RegistrationResponseJSON or
 * AuthenticationResponseJSON). Only the outline is checked here; the library checks the rest.
 */
export const CredentialBody = t.Object(
  {
    id: Base64Url('must be the credential id (base64url)', 1366),
    rawId: Base64Url('must be the credential id (base64url)', 1366),
    type: t.Literal('public-key', { error: 'must be "public-key"' }),
    response: t.Object(
      {
        clientDataJSON: Base64Url('must be the clientDataJSON (base64url)', 16384),
      },
      { additionalProperties: true, error: 'must carry clientDataJSON' },
    ),
    name: t.Optional(
      t.String({
        maxLength: 100,
        // No control characters: a name is shown in lists (and PostgreSQL refuses U+0000).
        pattern: '^[^\\u0000-\\u001f\\u007f]*$',
        description: 'A name for a new passkey (registration only)',
        error: 'must be at most 100 characters, without control characters',
      }),
    ),
  },
  {
    additionalProperties: true,
    description: 'The credential’s toJSON(), as the browser gives it',
    // A message of its own: Elysia's default one walks the body, and a body nested 150,000
    // levels deep overflowed the stack doing so (test/http/deep-bodies.test.ts).
    error: 'must be a credential as PublicKeyCredential.toJSON() gives it',
  },
)

/** The options, answered as the library makes them (WebAuthn Level 3 JSON). */
export const CreationOptions = t.Object(
  { challenge: t.String(), rp: t.Object({}, { additionalProperties: true }) },
  {
    additionalProperties: true,
    description:
      'PublicKeyCredentialCreationOptionsJSON: pass it to PublicKeyCredential.parseCreationOptionsFromJSON',
  },
)
export const RequestOptions = t.Object(
  { challenge: t.String(), rpId: t.Optional(t.String()) },
  {
    additionalProperties: true,
    description:
      'PublicKeyCredentialRequestOptionsJSON: pass it to PublicKeyCredential.parseRequestOptionsFromJSON',
  },
)

export const Passkey = t.Object({
  id: Type.Integer({ minimum: 1 }),
  name: t.String(),
  created_at: t.String({ format: 'date-time' }),
  last_used_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  backed_up: t.Boolean({ description: 'Synced by its provider (a multi-device passkey)' }),
  flagged_at: t.Union([t.String({ format: 'date-time' }), t.Null()], {
    description: 'When a sign-in showed its counter going back (a clone); refused since',
  }),
})

export const PasskeyList = t.Object({ data: t.Array(Passkey) })

export const FactorStatus = t.Object({
  totp: t.Boolean(),
  passkeys: t.Array(Passkey),
  recovery_codes_left: Type.Integer({ minimum: 0 }),
})

export const TotpEnrolment = t.Object({
  secret: t.String({ description: 'Base32, for typing into an authenticator app' }),
  otpauth_url: t.String({ description: 'The otpauth:// URI a QR code carries' }),
})

export const CodeBody = t.Object(
  { code: t.String({ maxLength: 16, error: 'must be the 6-digit code' }) },
  { error: 'must be a JSON object with the 6-digit code' },
)

export const RecoveryCodes = t.Object({
  recovery_codes: t.Array(t.String(), {
    minItems: 10,
    maxItems: 10,
    description: 'Shown once; each works once',
  }),
})

export const MfaVerifyBody = t.Object(
  {
    mfa_token: t.String({ maxLength: 128, error: 'must be the mfa_token /login answered' }),
    code: t.Optional(t.String({ maxLength: 16, error: 'must be the 6-digit code' })),
    recovery_code: t.Optional(t.String({ maxLength: 64, error: 'must be a recovery code' })),
  },
  { error: 'must be a JSON object with mfa_token and code or recovery_code' },
)
