import { type DocumentDecoration, Elysia } from 'elysia'
import { ACTOR_TYPES, type ActorType, parseInstant, seqOfEventId } from '../../audit/events'
import type { AuditFilter, AuditLog } from '../../audit/log'
import type { Config } from '../../config'
import { notFound } from '../../errors/errors'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { DEFAULT_LIMIT, linkHeader, MAX_LIMIT } from '../../http/pagination'
import { QueryReader } from '../../http/query'
import { publicBaseUrl } from '../../http/request-context'
import type { AuthPlugin } from '../auth/plugin'
import { guardOf } from '../authorisation'
import { AuditEventView, AuditPage } from './schema'

const tags = ['audit']

export interface AuditRouteInputs {
  auth: AuthPlugin
  audit: Pick<AuditLog, 'page' | 'get'>
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
}

/** The longest filter value taken: ids, actions and instants are all far shorter. */
const MAX_FILTER_LENGTH = 200

const FILTER_PARAMETERS = [
  ['actor_type', `Who acted: ${ACTOR_TYPES.join(', ')}`],
  ['actor_id', 'The acting user or key id (with actor_type)'],
  ['target_type', 'What was acted on: user, group, api_key, upload, session, login, …'],
  ['target_id', 'Its id ("who changed user 5?": target_type=user&target_id=5)'],
  ['action', 'An action (user.updated), or every action of a kind (user.*)'],
  ['since', 'At or after this instant (ISO 8601)'],
  ['until', 'Before this instant (ISO 8601)'],
] as const

const PARAMETERS: NonNullable<DocumentDecoration['parameters']> = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  { name: 'cursor', in: 'query', schema: { type: 'string' } },
  ...FILTER_PARAMETERS.map(([name, description]) => ({
    name,
    in: 'query',
    description,
    schema:
      name === 'actor_type'
        ? { type: 'string' as const, enum: [...ACTOR_TYPES] }
        : name === 'since' || name === 'until'
          ? { type: 'string' as const, format: 'date-time' }
          : { type: 'string' as const, maxLength: MAX_FILTER_LENGTH },
  })),
]

/**
 * CONTRACT section 16's log, for admins and keys with audit:read: newest first, by cursor (an
 * audit log only grows, so no total is counted), with filters every link repeats.
 */
export function auditRoutes(inputs: AuditRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, audit, config } = inputs
  const list = guardOf('GET /audit', config.usersAccess)
  const read = guardOf('GET /audit/:id', config.usersAccess)
  const listPath = `${prefix}/audit`

  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/audit',
      async ({ request, set }) => {
        const query = new QueryReader(request.url)
        const limit = query.integer('limit', { min: 1, max: MAX_LIMIT, fallback: DEFAULT_LIMIT })
        const cursor = query.string('cursor', { maxLength: 40 })
        const before = cursor === undefined ? null : seqOfEventId(cursor)
        if (cursor !== undefined && before === null) {
          query.reject('cursor', 'must be a next_cursor this list gave', cursor)
        }
        const { filter, given } = readFilter(query)
        query.assertValid()
        const page = await audit.page(filter, { limit, before })
        const nextCursor = page.next === null ? null : `evt_${page.next}`
        set.headers.link = linkHeader({
          base: publicBaseUrl(request, config.publicUrl),
          path: listPath,
          limit,
          targets: nextCursor === null ? {} : { next: { cursor: nextCursor } },
          keep: given,
        })
        return { data: page.data, pagination: { limit, next_cursor: nextCursor } }
      },
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'The audit log (audit:read)',
          description:
            'Every change to users, roles, groups, keys, uploads and credentials, and every sign-in, failed sign-in and lockout, newest first: who (actor), what (action, target), through which request (request_id, ip) and which fields changed (a password only as changed). Paged by `cursor` (`pagination.next_cursor`, and the `Link` header’s next); filters combine, and every link repeats them. Kept for --audit-retention (90 days by default).',
          security: list.security,
          parameters: PARAMETERS,
          responses: documented({
            200: AuditPage,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .get(
      '/audit/:id',
      async ({ params }) => {
        const seq = seqOfEventId(params.id)
        const event = seq === null ? null : await audit.get(seq)
        if (event === null) throw notFound('No audit event with this id')
        return event
      },
      {
        ...read.hook,
        detail: {
          tags,
          summary: 'One audit event (audit:read)',
          description: 'The event as GET /audit lists it; 404 once the retention purged it.',
          security: read.security,
          responses: documented({
            200: AuditEventView,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
}

/** The filters of the query, and the text of each given (for the links). */
function readFilter(query: QueryReader): {
  filter: AuditFilter
  given: Record<string, string | undefined>
} {
  const text = (name: string) => query.string(name, { maxLength: MAX_FILTER_LENGTH })
  const given: Record<string, string | undefined> = {}
  for (const [name] of FILTER_PARAMETERS) given[name] = text(name)
  const filter: AuditFilter = {
    actorId: given.actor_id,
    targetType: given.target_type,
    targetId: given.target_id,
    action: given.action,
  }
  const actorType = given.actor_type
  if (actorType !== undefined) {
    if ((ACTOR_TYPES as readonly string[]).includes(actorType)) {
      filter.actorType = actorType as ActorType
    } else query.reject('actor_type', `must be one of ${ACTOR_TYPES.join(', ')}`, actorType)
  }
  filter.since = instant(query, 'since', given.since)
  filter.until = instant(query, 'until', given.until)
  return { filter, given }
}

/** An ISO 8601 instant as stored (UTC, milliseconds), or a problem named for the parameter. */
function instant(query: QueryReader, name: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const at = parseInstant(text)
  if (at === null) {
    query.reject(name, 'must be an ISO 8601 instant, such as 2026-11-25T10:00:00Z', text)
    return undefined
  }
  return at
}
