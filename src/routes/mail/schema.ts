import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { offsetPageOf } from '../../http/openapi-schemas'
import { MAIL_FLOWS, MAIL_STATUSES } from '../../mail/outbox'

export const MailView = t.Object({
  id: Type.Integer({ minimum: 1 }),
  flow: t.Union(MAIL_FLOWS.map((flow) => t.Literal(flow))),
  to: t.String(),
  subject: t.String(),
  status: t.Union(
    MAIL_STATUSES.map((status) => t.Literal(status)),
    {
      description:
        'pending: waits for a first or a further attempt (or for --smtp-url); sent; failed: refused for good or out of attempts (POST /mail/{id}/resend); suppressed: asked for, not written (no account has the address, or it is verified already)',
    },
  ),
  attempts: Type.Integer({ minimum: 0 }),
  last_error: t.Union([t.String(), t.Null()]),
  created_at: t.String({ format: 'date-time' }),
  sent_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  text: t.Union([t.String(), t.Null()], {
    description:
      'The text body while the message is not sent (its link works); null once sent, when it is cleared.',
  }),
})

export const MailPage = offsetPageOf(MailView)
