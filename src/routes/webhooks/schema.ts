import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { offsetPageOf } from '../../http/openapi-schemas'

export const Received = t.Object({ received: t.Literal(true) })

export const EventView = t.Object({
  id: t.String({ description: 'The event id used for deduplication.' }),
  scheme: t.Union([t.Literal('standard'), t.Literal('stripe'), t.Literal('sha256')]),
  type: t.String(),
  status: t.Union([
    t.Literal('pending'),
    t.Literal('processed'),
    t.Literal('ignored'),
    t.Literal('failed'),
  ]),
  attempts: Type.Integer({ minimum: 0 }),
  error: t.Union([t.String(), t.Null()]),
  received_at: t.String({ format: 'date-time' }),
  processed_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})

export const EventPage = offsetPageOf(EventView)
