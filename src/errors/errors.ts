/**
 * The contract's error codes: one status each, and the text /docs/errors shows for them.
 * Every non-2xx answer with a body carries one of these codes in the envelope.
 */
export const ERROR_CODES = {
  BAD_REQUEST: {
    status: 400,
    summary: 'The request could not be read.',
    help: 'The body is not valid JSON or form data, is not valid UTF-8, or two values that must agree do not (for example an API key sent both as a header and as a query parameter). Fix the request; retrying it unchanged will fail the same way.',
  },
  INVALID_SIGNATURE: {
    status: 400,
    summary: 'A webhook delivery was not signed correctly.',
    help: 'The signature header is missing, malformed, made with another secret, made over other bytes, or its timestamp is more than 300 seconds away from the server clock.',
  },
  TOKEN_INVALID: {
    status: 400,
    summary: 'The link or code is not one roster sent.',
    help: 'The token of a verification, password reset, magic link, email change or invitation is unknown, or a magic-link code is wrong; or a passkey challenge or an mfa_token roster never issued (or not for this user). Copy the whole link from the message, or ask for a new one (a passkey ceremony or a sign-in: start again).',
  },
  TOKEN_USED: {
    status: 400,
    summary: 'The link or code was used already.',
    help: 'Every link and code works once, and so does a passkey challenge and an mfa_token. A later change of password or email also ends the links sent before it. Ask for a new one.',
  },
  TOKEN_EXPIRED: {
    status: 400,
    summary: 'The link or code has expired.',
    help: 'Password-reset and magic links last 15 minutes; verification, email-change, email-change undo and invitation links 7 days. A magic-link code also ends after 5 wrong tries. A passkey challenge and an mfa_token last 5 minutes (an mfa_token also ends after 5 wrong codes). Ask for a new one.',
  },
  UNAUTHORIZED: {
    status: 401,
    summary: 'A credential is missing, malformed, expired or revoked.',
    help: 'The WWW-Authenticate header names the scheme the route takes. Log in again or send a valid key.',
  },
  INVALID_CREDENTIALS: {
    status: 401,
    summary: 'The email or password is wrong.',
    help: 'The same answer is given for an unknown email and for a wrong password, so that nobody can find out which addresses have accounts.',
  },
  FORBIDDEN: {
    status: 403,
    summary: 'The credential is valid but may not do this.',
    help: 'Also the answer to a cross-site form post or a cookie-carrying request from an origin that is not allowed (CSRF protection).',
  },
  EMAIL_NOT_VERIFIED: {
    status: 403,
    summary: 'The account’s email address is not verified yet.',
    help: 'This server runs with --require-verified-email: sign-in waits until the link sent by POST /auth/verify-email/request has been followed. Ask for a new one if it was lost.',
  },
  REAUTHENTICATION_REQUIRED: {
    status: 403,
    summary: 'Changing this needs the account’s current password, or a recent sign-in.',
    help: 'The password or email of an account that can sign in changes only with an API key, an admin, or the account’s own credential together with `current_password` in the same body. A token alone is not enough: a stolen token must not become the account. Send `current_password` (wrong or missing gives this answer; wrong ones count as failed sign-ins). Adding or removing a passkey or TOTP, new recovery codes, and an account without a password changing its email or password take a sign-in within the last 5 minutes instead: sign in again.',
  },
  NOT_FOUND: {
    status: 404,
    summary: 'No such route or record.',
    help: 'A malformed id (letters, zero, decimals, numbers above 2^53-1) is answered like a missing one.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    summary: 'The route exists but does not take this method.',
    help: 'The Allow header lists the methods it takes.',
  },
  CONFLICT: {
    status: 409,
    summary: 'The request clashes with the current state.',
    help: 'An email already in use (compared without regard to case), or an Idempotency-Key reused with a different body.',
  },
  PRECONDITION_FAILED: {
    status: 412,
    summary: 'If-Match did not match the current ETag.',
    help: 'The record changed since you read it. GET it again, re-apply your change and retry with the new ETag.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    summary: 'The body is over a limit.',
    help: 'JSON bodies may be at most 1 MiB. Upload limits are set by --max-file-size, --max-files and --max-upload-size.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    summary: 'The Content-Type is not one this route reads.',
    help: 'JSON routes take application/json (PATCH also application/merge-patch+json), in UTF-8: a charset parameter naming another encoding is refused.',
  },
  MISDIRECTED_REQUEST: {
    status: 421,
    summary: 'This server does not answer for that host name.',
    help: 'While /users is open (no credentials needed), roster answers only requests addressed to a loopback name (localhost, 127.0.0.0/8, [::1]) or to the host of --public-url, so that a web page cannot reach it through a DNS name it controls (DNS rebinding). Use http://localhost:PORT, set --public-url, or run with --users-access protected.',
  },
  VALIDATION_ERROR: {
    status: 422,
    summary: 'One or more values are invalid.',
    help: '`details` lists every bad field with `field`, `message` and `received`: the rejected input as text, cut to 200 characters; an empty string when the field was absent; `[redacted]` for a secret such as a password, whatever its value or length.',
  },
  RATE_LIMITED: {
    status: 429,
    summary: 'Too many requests.',
    help: 'Wait the number of seconds in Retry-After before trying again.',
  },
  INTERNAL_ERROR: {
    status: 500,
    summary: 'Something failed inside roster.',
    help: 'Nothing about the failure is sent to the client; the server log has it under the same request_id.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    summary: 'roster cannot serve the request right now.',
    help: 'The database or the upload directory is failing, or the server is shutting down. Retry later. When the database file was deleted or replaced while roster ran, writes are refused until roster is restarted.',
  },
  INSUFFICIENT_STORAGE: {
    status: 507,
    summary: 'The disk is full.',
    help: 'Nothing from the request was kept. Free space on the data directory and retry; /health reports the disk as failing meanwhile.',
  },
} as const satisfies Record<string, { status: number; summary: string; help: string }>

export type ErrorCode = keyof typeof ERROR_CODES

/**
 * One entry of an error's `details`. `received` is always there: the rejected input as text
 * (cut to 200 characters), `""` when the field was absent, `[redacted]` for a secret.
 */
export interface ErrorDetail {
  field: string
  message: string
  received: string
}

/**
 * The one error type services and routes throw. The error handler turns it into the envelope.
 * (Named `errorCode`, not `code`: Elysia would take a `code` field as its own error kind.)
 */
export class AppError extends Error {
  readonly status: number

  constructor(
    readonly errorCode: ErrorCode,
    message: string,
    readonly details: readonly ErrorDetail[] = [],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message)
    this.status = ERROR_CODES[errorCode].status
  }
}

export const notFound = (message = 'Not found') => new AppError('NOT_FOUND', message)

export const badRequest = (message: string) => new AppError('BAD_REQUEST', message)

export const validationFailed = (details: readonly ErrorDetail[]) =>
  new AppError('VALIDATION_ERROR', 'Request validation failed', details)

export const conflict = (message: string, details: readonly ErrorDetail[] = []) =>
  new AppError('CONFLICT', message, details)

export const payloadTooLarge = (message: string) => new AppError('PAYLOAD_TOO_LARGE', message)

export const unsupportedMediaType = (message: string) =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', message)

export const preconditionFailed = () =>
  new AppError('PRECONDITION_FAILED', 'If-Match does not match the current ETag')

/** RFC 7644 section 3.12's `scimType` values roster answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'invalidSyntax'
  | 'invalidValue'
  | 'invalidPath'
  | 'invalidVers'
  | 'mutability'
  | 'noTarget'
  | 'tooMany'
  | 'uniqueness'

/**
 * An error of a SCIM request, with its `scimType`. Under `/scim/v2` every error is answered in
 * SCIM's form (http/error-handler.ts); this one says which `scimType` it has.
 */
export class ScimError extends AppError {
  constructor(
    errorCode: ErrorCode,
    readonly scimType: ScimType | null,
    message: string,
    details?: ErrorDetail[],
  ) {
    super(errorCode, message, details)
  }
}

/** A SCIM 400 with its scimType (invalidFilter, invalidValue, invalidSyntax, …). */
export const scimBadRequest = (scimType: ScimType, message: string) =>
  new ScimError('BAD_REQUEST', scimType, message)
