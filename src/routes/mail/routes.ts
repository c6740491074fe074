import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { conflict, notFound } from '../../errors/errors'
import { chronologicalListParameters, documented, errorResponses } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import { MAIL_STATUSES, type MailOutbox } from '../../mail/outbox'
import type { AuthPlugin } from '../auth/plugin'
import { guardOf } from '../authorisation'
import { MailPage, MailView } from './schema'

const tags = ['account by email']

export interface MailRouteInputs {
  auth: AuthPlugin
  outbox: MailOutbox
  /** A message is due now (wakes the mail worker). */
  wakeWorker: () => void
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
}

/**
 * The outbox, for admins and keys with users:write (its unsent messages carry working links):
 * what was sent, what waits and why, and a resend for what failed.
 */
export function mailRoutes(inputs: MailRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, outbox, config } = inputs
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess)
  const list = guard('GET /mail')
  const read = guard('GET /mail/:id')
  const resend = guard('POST /mail/:id/resend')
  const listPath = `${prefix}/mail`
  const NOT_FOUND = 'No message with this id'

  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/mail',
      ({ request, set }) =>
        offsetPageAnswer(request, set, {
          path: listPath,
          publicUrl: config.publicUrl,
          filters: (query) => ({
            status: query.has('status')
              ? query.oneOf('status', MAIL_STATUSES, 'pending')
              : undefined,
          }),
          usually: 'newest',
          list: (page, { status }) => outbox.list(page, status),
        }),
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'The mail outbox (users:write)',
          description:
            'Newest first (sort=created: oldest first), paginated like /users. `status` keeps only the messages in that state. Without --smtp-url every message stays pending here, its link in `text`.',
          security: list.security,
          parameters: [
            ...chronologicalListParameters('newest'),
            { name: 'status', in: 'query', schema: { type: 'string', enum: [...MAIL_STATUSES] } },
          ],
          responses: documented({
            200: MailPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .get(
      '/mail/:id',
      async ({ params }) => {
        const id = parseRowId(params.id)
        const found = id === null ? null : await outbox.get(id)
        if (found === null) throw notFound(NOT_FOUND)
        return found
      },
      {
        ...read.hook,
        detail: {
          tags,
          summary: 'One message of the outbox (users:write)',
          description:
            'The message as GET /mail lists it: its text while it is not sent, null once it is.',
          security: read.security,
          responses: documented({
            200: MailView,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .post(
      '/mail/:id/resend',
      async ({ params, set }) => {
        const id = parseRowId(params.id)
        const outcome = id === null ? 'missing' : await outbox.resend(id)
        if (outcome === 'missing') throw notFound(NOT_FOUND)
        if (outcome === 'not-failed') {
          throw conflict('Only a failed message can be resent; this one has not failed')
        }
        inputs.wakeWorker()
        set.status = 202
        return outcome
      },
      {
        ...resend.hook,
        detail: {
          tags,
          summary: 'Send a failed message again (users:write)',
          description:
            'Makes a failed message pending with a fresh count of attempts; 202 with the message as it stands (the attempt runs right after, when --smtp-url is set). 409 when it is pending, sent or suppressed. It keeps its Message-ID.',
          security: resend.security,
          responses: documented({
            202: MailView,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT'),
          }),
        },
      },
    )
}
