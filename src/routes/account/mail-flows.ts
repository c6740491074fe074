import { Elysia, t } from 'elysia'
import type { AccountFlows, Asker } from '../../accounts/flows'
import { adminTargetRefusal } from '../../auth/authority'
import { hashPassword } from '../../auth/passwords'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { fieldDetail } from '../../errors/details'
import { AppError, notFound, validationFailed } from '../../errors/errors'
import { clientIp } from '../../http/client'
import { jsonBody } from '../../http/json-body'
import { linkBase } from '../../http/link-base'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { toView } from '../../users/records'
import type { AuthPlugin, CookieSecurity } from '../auth/plugin'
import { auditSourceOf, principalOf, requestIdOf } from '../auth/principal'
import { answerSignIn, type SignInAnswerInputs } from '../auth/sign-in'
import { MfaRequiredAnswer } from '../auth/sign-in-schema'
import { guardOf, type Operation } from '../authorisation'
import { UserView } from '../users/schema'
import {
  EMAIL_CHANGE_PAGE,
  EMAIL_CHANGE_UNDO_PAGE,
  INVITATION_PAGE,
  LINK_PAGE_HEADERS,
  MAGIC_LINK_PAGE,
  PASSWORD_RESET_PAGE,
  VERIFY_EMAIL_PAGE,
} from './link-pages'
import {
  Accepted,
  EmailChangeRequest,
  EmailRequest,
  InvitationConfirmation,
  LoginAnswer,
  MagicLinkConfirmation,
  PasswordResetConfirmation,
  TokenConfirmation,
  VerificationRequest,
} from './schema'

const tags = ['account by email']

export interface MailFlowRouteInputs {
  auth: AuthPlugin
  flows: AccountFlows
  config: CookieSecurity & Pick<Config, 'publicUrl' | 'trustProxy' | 'usersAccess'>
  /** Answers a magic link's sign-in like /login (or with mfa_required when TOTP is on). */
  signIn: SignInAnswerInputs
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

/** What both route modules derive from their inputs: guards, and who asks. */
function routeKit(inputs: MailFlowRouteInputs) {
  const { config } = inputs
  return {
    guard: (operation: Operation) => guardOf(operation, config.usersAccess),
    asker: (request: Request, server: Parameters<typeof clientIp>[1]): Asker => ({
      clientIp: clientIp(request, server, config.trustProxy),
      linkBase: linkBase(request, config.publicUrl),
    }),
    /** The request in the audit log (the flows name the token's holder as the actor). */
    source: (request: Request, server: Parameters<typeof clientIp>[1], set: { headers: object }) =>
      auditSourceOf(set, clientIp(request, server, config.trustProxy)),
  }
}

/**
 * CONTRACT section 14's flows: verification and password reset. A request answers 202 the same
 * way for every address; a confirmation spends the link's token (400 TOKEN_* when it cannot).
 * Each link opens a page (GET) that asks for a click before it confirms.
 */
export function mailFlowRoutes(inputs: MailFlowRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, flows } = inputs
  const { guard, asker, source } = routeKit(inputs)
  const verifyRequest = guard('POST /auth/verify-email/request')
  const verifyConfirm = guard('POST /auth/verify-email/confirm')
  const resetRequest = guard('POST /auth/password-reset/request')
  const resetConfirm = guard('POST /auth/password-reset/confirm')

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
      async ({ body, request, server, set }) =>
        toView(await flows.confirmVerification(body.token, source(request, server, set))),
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
      async ({ body, request, server, set }) => {
        const passwordHash = await hashPassword(body.password)
        const by = source(request, server, set)
        return toView(await flows.confirmPasswordReset(body.token, passwordHash, by))
      },
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
}

/**
 * Magic links, email changes and invitations (a module apart from mailFlowRoutes only so that
 * TypeScript can still type each chain of routes).
 */
export function accountChangeRoutes(inputs: MailFlowRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, flows } = inputs
  const { guard, asker, source } = routeKit(inputs)
  const magicRequest = guard('POST /auth/magic-link/request')
  const magicConfirm = guard('POST /auth/magic-link/confirm')
  const changeRequest = guard('POST /auth/email-change/request')
  const changeConfirm = guard('POST /auth/email-change/confirm')
  const changeUndo = guard('POST /auth/email-change-undo/confirm')
  const invite = guard('POST /users/:id/invite')
  const inviteConfirm = guard('POST /auth/invitation/confirm')

  return new Elysia({ prefix })
    .use(auth)
    .post(
      '/auth/magic-link/request',
      async ({ body, request, server, set }) => {
        await flows.requestMagicLink(body.email, asker(request, server))
        set.status = 202
        return ACCEPTED
      },
      {
        ...magicRequest.hook,
        parse: jsonBody(),
        body: EmailRequest,
        detail: {
          tags,
          summary: 'Mail a sign-in link and code',
          description:
            '202 the same way whether or not the address has an account. The message carries a link to `/auth/magic-link?token=…` and a 6-digit code; both work once and last 15 minutes. Limits as for a reset.',
          security: magicRequest.security,
          responses: documented({ 202: Accepted, ...REQUEST_ERRORS }),
        },
      },
    )
    .post(
      '/auth/magic-link/confirm',
      async ({ body, request, server, cookie, set }) => {
        const by = source(request, server, set)
        const user = await flows.confirmMagicLink(magicLinkProof(body), by)
        return await answerSignIn(
          inputs.signIn,
          { request, cookie, set },
          { id: user.id },
          by,
          'magic_link',
        )
      },
      {
        ...magicConfirm.hook,
        parse: jsonBody(),
        body: MagicLinkConfirmation,
        detail: {
          tags,
          summary: 'Sign in with a magic link or code',
          description:
            'Answers like POST /login: the user, a bearer token (1 h) and the session cookie (or, for an account with TOTP, mfa_required and an mfa_token for POST /auth/mfa/verify). A code takes 5 wrong tries, then it is spent (TOKEN_EXPIRED); an unknown address or a wrong code is TOKEN_INVALID. Signing in this way verifies the address. A deactivated account is refused (403) after its link or code is spent.',
          security: magicConfirm.security,
          responses: documented({
            200: t.Union([LoginAnswer, MfaRequiredAnswer]),
            ...CONFIRM_ERRORS,
            ...errorResponses('FORBIDDEN'),
          }),
        },
      },
    )
    .post(
      '/auth/email-change/request',
      async ({ body, request, server, set }) => {
        const principal = principalOf(set)
        if (principal?.kind !== 'user') {
          throw new AppError('UNAUTHORIZED', 'Sign in as the user whose address changes')
        }
        // The door's step-up, as PATCH /users/{id} {email} asks it; checked before the address
        // is, so a stolen token learns nothing, not even who has it.
        await inputs.signIn.door.requireStepUp(
          principal,
          body.current_password,
          () => ({
            ip: clientIp(request, server, inputs.config.trustProxy),
            requestId: requestIdOf(set),
          }),
          'password-first',
        )
        await flows.requestEmailChange(principal.userId, body.new_email, asker(request, server))
        set.status = 202
        return { message: 'A message with a link is on its way to the new address.' }
      },
      {
        ...changeRequest.hook,
        parse: jsonBody(),
        body: EmailChangeRequest,
        detail: {
          tags,
          summary: 'Move the signed-in account to a new address',
          description:
            'Mails a link to the new address (7 days) and a notice to the current one; the address changes when the link is followed. Needs the step-up of PATCH /users/{id} {email}: `current_password` in the body (a wrong one counts as a failed sign-in), or, for an account without a password, a sign-in within the last 5 minutes; 403 REAUTHENTICATION_REQUIRED otherwise, before anything else is checked. 409 when another account has the new address; 422 when it is the current one.',
          security: changeRequest.security,
          responses: documented({
            202: Accepted,
            ...errorResponses(
              'UNAUTHORIZED',
              'REAUTHENTICATION_REQUIRED',
              'CONFLICT',
              'VALIDATION_ERROR',
              'RATE_LIMITED',
            ),
          }),
        },
      },
    )
    .post(
      '/auth/email-change/confirm',
      async ({ body, request, server, set }) => {
        const by = source(request, server, set)
        return toView(await flows.confirmEmailChange(body.token, by, asker(request, server)))
      },
      {
        ...changeConfirm.hook,
        parse: jsonBody(),
        body: TokenConfirmation,
        detail: {
          tags,
          summary: 'Confirm a new address',
          description:
            'Spends the link: the address becomes the new one, verified; the links mailed to the old one end, and the old one is mailed a notice with a link to `/auth/email-change-undo?token=…` that undoes the change (7 days). 409 when another account took the address meanwhile.',
          security: changeConfirm.security,
          responses: documented({
            200: UserView,
            ...CONFIRM_ERRORS,
            ...errorResponses('CONFLICT'),
          }),
        },
      },
    )
    .post(
      '/auth/email-change-undo/confirm',
      async ({ body, request, server, set }) =>
        toView(await flows.undoEmailChange(body.token, source(request, server, set))),
      {
        ...changeUndo.hook,
        parse: jsonBody(),
        body: TokenConfirmation,
        detail: {
          tags,
          summary: 'Undo an email change from the old address',
          description:
            'Spends the link the old address was mailed when the account moved away from it (by a confirmed email change, or by the account itself through PUT or PATCH /users/{id}): the address goes back to the old one, verified, and every session and token of the account ends, with every other link mailed to it. A password changed meanwhile stays: reset it from the old address. The link works once (TOKEN_USED after) and lasts 7 days (TOKEN_EXPIRED); a new password or another address does not end it. 409 when another account has the old address now: nothing changes and the link still works.',
          security: changeUndo.security,
          responses: documented({
            200: UserView,
            ...CONFIRM_ERRORS,
            ...errorResponses('CONFLICT'),
          }),
        },
      },
    )
    .post(
      '/users/:id/invite',
      async ({ params, request, server, set }) => {
        const id = parseRowId(params.id)
        if (id === null) throw notFound('No user with this id')
        // An invitation replaces the password: an admin's takes `*` (section 17).
        await flows.invite(id, asker(request, server), adminTargetRefusal(principalOf(set), id))
        set.status = 202
        return { message: 'An invitation is on its way.' }
      },
      {
        ...invite.hook,
        detail: {
          tags,
          summary: 'Invite a user to set its password (users:write)',
          description:
            'Mails the user a link to `/auth/invitation?token=…` (7 days) where it sets its password; accepting verifies the address. An account that has a password may be invited too (the password is replaced when it accepts).',
          security: invite.security,
          responses: documented({
            202: Accepted,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'RATE_LIMITED'),
          }),
        },
      },
    )
    .post(
      '/auth/invitation/confirm',
      async ({ body, request, server, set }) => {
        const passwordHash = await hashPassword(body.password)
        const by = source(request, server, set)
        return toView(await flows.confirmInvitation(body.token, passwordHash, by))
      },
      {
        ...inviteConfirm.hook,
        parse: jsonBody(),
        body: InvitationConfirmation,
        detail: {
          tags,
          summary: 'Accept an invitation',
          description:
            'Spends the invitation and sets the password; the address counts as verified. Answers the user; sign in with POST /login.',
          security: inviteConfirm.security,
          responses: documented({ 200: UserView, ...CONFIRM_ERRORS }),
        },
      },
    )
}

/** `{ token }` alone, or `{ email, code }` together; anything else names what is missing. */
function magicLinkProof(body: {
  token?: string
  email?: string
  code?: string
}): { token: string } | { email: string; code: string } {
  const { token, email, code } = body
  if (token !== undefined && email === undefined && code === undefined) return { token }
  if (token === undefined && email !== undefined && code !== undefined) return { email, code }
  const missing = token !== undefined ? 'token' : email === undefined ? 'email' : 'code'
  throw validationFailed([
    fieldDetail(
      missing,
      token !== undefined
        ? 'goes alone, without email and code'
        : 'is required: send { token } or { email, code }',
      token !== undefined ? '[redacted]' : undefined,
    ),
  ])
}

const PAGES = [
  ['/auth/verify-email', VERIFY_EMAIL_PAGE, 'a verification link', 'its button confirms'],
  [
    '/auth/password-reset',
    PASSWORD_RESET_PAGE,
    'a password-reset link',
    'it asks for the new password',
  ],
  ['/auth/magic-link', MAGIC_LINK_PAGE, 'a magic link', 'its button signs in'],
  ['/auth/email-change', EMAIL_CHANGE_PAGE, 'an email-change link', 'its button confirms'],
  [
    '/auth/email-change-undo',
    EMAIL_CHANGE_UNDO_PAGE,
    'an email change’s undo link',
    'its button undoes the change',
  ],
  ['/auth/invitation', INVITATION_PAGE, 'an invitation', 'it asks for the password'],
] as const

/**
 * The pages the links in mail open: documents for a browser, not API, so served once at
 * `/auth/<flow>` (no /v1 or /v2 copies); each posts to its flow's `/confirm` beside it.
 */
export function linkPageRoutes(config: Pick<Config, 'usersAccess'>) {
  const app = new Elysia({ name: 'link-pages' })
  for (const [path, body, what, action] of PAGES) {
    const guard = guardOf(`GET ${path}`, config.usersAccess)
    app.get(path, () => new Response(body, { headers: LINK_PAGE_HEADERS }), {
      ...guard.hook,
      detail: {
        tags,
        summary: `The page ${what} opens`,
        description: `HTML. Opening it changes nothing; ${action}.`,
        security: guard.security,
        responses: { 200: { description: 'An HTML page', content: { 'text/html': {} } } },
      },
    })
  }
  return app
}
