import { Elysia } from 'elysia'
import type { AccountFlows, Asker } from '../../accounts/flows'
import { hashPassword } from '../../auth/passwords'
import type { Config } from '../../config'
import { isLoopbackHost } from '../../config-values'
import { fieldDetail } from '../../errors/details'
import { validationFailed } from '../../errors/errors'
import { clientIp } from '../../http/client'
import { jsonBody } from '../../http/json-body'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { toView } from '../../users/records'
import type { AuthPlugin } from '../auth/plugin'
import { principalOf } from '../auth/principal'
import { guardOf } from '../authorisation'
import { UserView } from '../users/schema'
import { LINK_PAGE_HEADERS, PASSWORD_RESET_PAGE, VERIFY_EMAIL_PAGE } from './link-pages'
import {
  Accepted,
  EmailRequest,
  PasswordResetConfirmation,
  TokenConfirmation,
  VerificationRequest,
} from './schema'

const tags = ['account by email']

export interface MailFlowRouteInputs {
  auth: AuthPlugin
  flows: AccountFlows
  config: Pick<Config, 'publicUrl' | 'trustProxy' | 'usersAccess'>
}

/** The same answer for every request, whoever the address belongs to. */
const ACCEPTED = { message: 'If the address belongs to an account, a message is on its way.' }

const REQUEST_ERRORS = errorResponses(
  'BAD_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
)
const CONFIRM_ERRORS = errorResponses(
  'BAD_REQUEST',
  'TOKEN_INVALID',
  'TOKEN_USED',
  'TOKEN_EXPIRED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'VALIDATION_ERROR',
)

/**
 * Where links in mail point: --public-url, or (a laptop without one) this request's origin when
 * its host is a loopback name. Never any other Host header: an attacker asking a reset for
 * somebody else's address must not choose the host of the link that person receives.
 */
export function linkBase(request: Request, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl
  const url = new URL(request.url)
  const loopback = isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ''))
  return loopback ? url.origin : `http://localhost${url.port === '' ? '' : `:${url.port}`}`
}

/**
 * CONTRACT section 14's flows: verification and password reset. A request answers 202 the same
 * way for every address; a confirmation spends the link's token (400 TOKEN_* when it cannot).
 * Each link opens a page (GET) that asks for a click before it confirms.
 */
export function mailFlowRoutes(inputs: MailFlowRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, flows, config } = inputs
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess)
  const verifyRequest = guard('POST /auth/verify-email/request')
  const verifyConfirm = guard('POST /auth/verify-email/confirm')
  const verifyPage = guard('GET /auth/verify-email')
  const resetRequest = guard('POST /auth/password-reset/request')
  const resetConfirm = guard('POST /auth/password-reset/confirm')
  const resetPage = guard('GET /auth/password-reset')
  const asker = (request: Request, server: Parameters<typeof clientIp>[1]): Asker => ({
    clientIp: clientIp(request, server, config.trustProxy),
    linkBase: linkBase(request, config.publicUrl),
  })
  const html = (body: string) => new Response(body, { headers: LINK_PAGE_HEADERS })

  return new Elysia({ prefix })
    .use(auth)
    .post(
      '/auth/verify-email/request',
      async ({ body, request, server, set }) => {
        const principal = principalOf(set)
        const target =
          body.email !== undefined
            ? { email: body.email }
            : principal?.kind === 'user'
              ? { userId: principal.userId }
              : null
        if (target === null) {
          throw validationFailed([
            fieldDetail('email', 'is required unless a user is signed in', undefined),
          ])
        }
        await flows.requestVerification(target, asker(request, server))
        set.status = 202
        return ACCEPTED
      },
      {
        ...verifyRequest.hook,
        parse: jsonBody(['application/json'], { optional: true }),
        body: VerificationRequest,
        detail: {
          tags,
          summary: 'Mail a verification link',
          description:
            'Signed in, with no body: to the user’s own address. Without signing in, `{ email }`. 202 the same way whether or not the address has an account or is verified already. At most 5 messages an hour to one address and 20 requests an hour from one client (429 with Retry-After). The link opens `/auth/verify-email?token=…` and lasts 7 days.',
          security: verifyRequest.security,
          responses: documented({ 202: Accepted, ...REQUEST_ERRORS }),
        },
      },
    )
    .post(
      '/auth/verify-email/confirm',
      async ({ body }) => toView(await flows.confirmVerification(body.token)),
      {
        ...verifyConfirm.hook,
        parse: jsonBody(),
        body: TokenConfirmation,
        detail: {
          tags,
          summary: 'Confirm an address',
          description:
            'Spends the token of a verification link and answers the user, `email_verified_at` set. A token works once (400 TOKEN_USED after), lasts 7 days (TOKEN_EXPIRED), and ends when the address or the password changes.',
          security: verifyConfirm.security,
          responses: documented({ 200: UserView, ...CONFIRM_ERRORS }),
        },
      },
    )
    .post(
      '/auth/password-reset/request',
      async ({ body, request, server, set }) => {
        await flows.requestPasswordReset(body.email, asker(request, server))
        set.status = 202
        return ACCEPTED
      },
      {
        ...resetRequest.hook,
        parse: jsonBody(),
        body: EmailRequest,
        detail: {
          tags,
          summary: 'Mail a password-reset link',
          description:
            '202 the same way, in the same time, whether or not the address has an account. At most 5 messages an hour to one address and 20 requests an hour from one client (429 with Retry-After). The link opens `/auth/password-reset?token=…` and lasts 15 minutes.',
          security: resetRequest.security,
          responses: documented({ 202: Accepted, ...REQUEST_ERRORS }),
        },
      },
    )
    .post(
      '/auth/password-reset/confirm',
      async ({ body }) =>
        toView(await flows.confirmPasswordReset(body.token, await hashPassword(body.password))),
      {
        ...resetConfirm.hook,
        parse: jsonBody(),
        body: PasswordResetConfirmation,
        detail: {
          tags,
          summary: 'Set a new password with a reset link',
          description:
            'Spends the token and sets the password: every session and token of the account ends, and so do the other links mailed to it. Following the link proves the mailbox, so the address counts as verified. Answers the user.',
          security: resetConfirm.security,
          responses: documented({ 200: UserView, ...CONFIRM_ERRORS }),
        },
      },
    )
    .get('/auth/verify-email', () => html(VERIFY_EMAIL_PAGE), {
      ...verifyPage.hook,
      detail: {
        tags,
        summary: 'The page a verification link opens',
        description: 'HTML. Opening it changes nothing; its button confirms.',
        security: verifyPage.security,
        responses: { 200: { description: 'An HTML page', content: { 'text/html': {} } } },
      },
    })
    .get('/auth/password-reset', () => html(PASSWORD_RESET_PAGE), {
      ...resetPage.hook,
      detail: {
        tags,
        summary: 'The page a password-reset link opens',
        description: 'HTML. Asks for the new password and confirms with it.',
        security: resetPage.security,
        responses: { 200: { description: 'An HTML page', content: { 'text/html': {} } } },
      },
    })
}
