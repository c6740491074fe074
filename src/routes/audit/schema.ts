import { t } from 'elysia'
import { ACTOR_TYPES } from '../../audit/events'
import { PageLimit } from '../../http/openapi-schemas'

const NullableString = t.Union([t.String(), t.Null()])

export const AuditEventView = t.Object({
  id: t.String({ description: 'evt_ and a number; newer events have greater numbers' }),
  at: t.String({ format: 'date-time' }),
  actor: t.Object({
    type: t.Union(ACTOR_TYPES.map((type) => t.Literal(type))),
    id: t.Union([t.String(), t.Null()], {
      description:
        'The user or key id as text; the event id for a webhook, the operating-system user for the CLI; null for system work and callers without credentials',
    }),
  }),
  action: t.String({ description: '<target type>.<past tense>: user.created, login.failed, …' }),
  target: t.Object({ type: t.String(), id: NullableString }),
  request_id: NullableString,
  ip: NullableString,
  changes: t.Union(
    [
      t.Record(
        t.String(),
        t.Union([
          t.Object({ before: t.Unknown(), after: t.Unknown() }),
          t.Object({ changed: t.Literal(true) }),
        ]),
      ),
      t.Null(),
    ],
    {
      description:
        'The fields that changed, each { before, after }; a secret (a password) only as { changed: true }',
    },
  ),
})

export const AuditPage = t.Object({
  data: t.Array(AuditEventView),
  pagination: t.Object({
    limit: PageLimit,
    next_cursor: t.Union([t.String(), t.Null()], {
      description: 'Pass as `cursor` for the next (older) page; null on the last',
    }),
  }),
})
