import { Elysia } from 'elysia'
import { principalKey } from '../../auth/principal'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import type { Transaction } from '../../db/unit'
import { notFound } from '../../errors/errors'
import { type GroupRecord, toGroupView } from '../../groups/records'
import type { GroupStore, GroupWrites } from '../../groups/store'
import { noneMatch } from '../../http/conditional'
import { jsonBody } from '../../http/json-body'
import {
  chronologicalListParameters,
  documented,
  errorResponses,
  headerParameters,
} from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import {
  checkedIdempotencyKey,
  type IdempotencyClaims,
  type IdempotencyStore,
  once,
} from '../../idempotency/store'
import type { AuthPlugin } from '../auth/plugin'
import { auditSourceOf, principalOf } from '../auth/principal'
import { guardOf } from '../authorisation'
import { etagOf, versionsFromIfMatch } from '../users/etag'
import { answerWith, replay } from '../users/idempotent-answers'
import { IDEMPOTENCY_KEY, IF_MATCH, IF_NONE_MATCH } from '../users/route-docs'
import {
  CreateGroupBody,
  DeletedGroup,
  GroupPage,
  GroupView,
  PatchGroupBody,
  ReplaceGroupBody,
} from './schema'

const tags = ['groups']

/** What PUT and PATCH /groups/{id} may answer. */
const WRITE_RESPONSES = documented({
  200: GroupView,
  ...errorResponses(
    'BAD_REQUEST',
    'NOT_FOUND',
    'CONFLICT',
    'PRECONDITION_FAILED',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'VALIDATION_ERROR',
  ),
})

/** What the groups routes are given by the composition root. */
export interface GroupRouteInputs {
  auth: AuthPlugin
  groups: GroupStore
  idempotency: IdempotencyStore
  transaction: Transaction<{ groups: GroupWrites; idempotency: IdempotencyClaims }>
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
}

/** The numeric id from the path; a malformed one is answered like a missing group (404). */
function parseGroupId(text: string): number {
  const id = parseRowId(text)
  if (id === null) throw notFound('No group with this id')
  return id
}

/**
 * /groups under one prefix: the users API's habits (list envelope and Link, ETag and
 * If-Match, Idempotency-Key on create) for groups of users, and one membership at a time.
 */
export function groupRoutes(inputs: GroupRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, groups, idempotency, transaction, config } = inputs
  const listPath = `${prefix}/groups`
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, config.usersAccess)
  const list = guard('GET /groups')
  const create = guard('POST /groups')
  const read = guard('GET /groups/:id')
  const replace = guard('PUT /groups/:id')
  const patch = guard('PATCH /groups/:id')
  const remove = guard('DELETE /groups/:id')
  const join = guard('PUT /groups/:id/members/:userId')
  const leave = guard('DELETE /groups/:id/members/:userId')

  /** The group as an answer: its view, with its ETag. */
  const answer = (group: GroupRecord, set: { headers: Record<string, unknown> }) => {
    set.headers.etag = etagOf(group)
    return toGroupView(group)
  }

  /** One membership added or taken away, then the group as it now stands. */
  async function membership(
    params: { id: string; userId: string },
    set: { headers: Record<string, unknown> },
    adding: boolean,
  ) {
    const groupId = parseGroupId(params.id)
    const userId = parseRowId(params.userId)
    if (userId === null) {
      if (adding) throw notFound('No user with this id')
    } else if (adding) {
      await groups.addMember(groupId, userId, auditSourceOf(set))
    } else {
      await groups.removeMember(groupId, userId, auditSourceOf(set))
    }
    const group = await groups.get(groupId)
    if (group === null) throw notFound('No group with this id')
    return answer(group, set)
  }

  const membershipDocs = (adding: boolean) => ({
    tags,
    summary: adding ? 'Put a user in a group' : 'Take a user out of a group',
    description: adding
      ? 'Idempotent: a user already in the group stays, and the answer is the same. 404 for a missing group or user. The group’s and the user’s ETags change when the membership does.'
      : 'Idempotent: a user not in the group (or not there at all) is no error. 404 for a missing group. The group’s and the user’s ETags change when the membership does.',
    responses: documented({ 200: GroupView, ...errorResponses('NOT_FOUND') }),
  })

  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/groups',
      async ({ request, set }) => {
        const page = await offsetPageAnswer(request, set, {
          path: listPath,
          publicUrl: config.publicUrl,
          usually: 'oldest',
          list: (request) => groups.list(request),
        })
        return { data: page.data.map(toGroupView), pagination: page.pagination }
      },
      {
        ...list.hook,
        detail: {
          tags,
          summary: 'List groups',
          description:
            'Oldest first (sort=-created: newest first), paginated like /users (limit, offset, X-Total-Count, Link).',
          security: list.security,
          parameters: chronologicalListParameters('oldest'),
          responses: documented({
            200: GroupPage,
            ...errorResponses('BAD_REQUEST', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .post(
      '/groups',
      async ({ body, request, set }) => {
        const key = checkedIdempotencyKey(request.headers.get('idempotency-key'))
        const input = { name: body.name, description: body.description ?? null }
        if (key === null) {
          const group = await groups.create(input, auditSourceOf(set))
          set.status = 201
          set.headers.location = `${listPath}/${group.id}`
          return answer(group, set)
        }
        const scope = `${principalKey(principalOf(set))}:POST /groups`
        const claim = { scope, key, fingerprint: idempotency.fingerprint(body) }
        const earlier = await idempotency.lookup(claim.scope, key, claim.fingerprint)
        if (earlier !== null) return replay(earlier)
        const { replayed, answer: stored } = await transaction((tx) =>
          once(tx.idempotency, claim, async () => {
            const group = await tx.groups.create(input, auditSourceOf(set))
            return {
              status: 201,
              body: JSON.stringify(toGroupView(group)),
              location: `${listPath}/${group.id}`,
            }
          }),
        )
        return replayed ? replay(stored) : answerWith(stored)
      },
      {
        ...create.hook,
        parse: jsonBody(),
        body: CreateGroupBody,
        detail: {
          tags,
          summary: 'Create a group',
          description:
            'Answers 201 with Location. Names are unique without regard to case (409 otherwise). With an Idempotency-Key header, a retry with the same body replays the first answer for 24 h.',
          security: create.security,
          ...headerParameters(IDEMPOTENCY_KEY),
          responses: documented({
            201: GroupView,
            ...errorResponses(
              'BAD_REQUEST',
              'CONFLICT',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
        },
      },
    )
    .get(
      '/groups/:id',
      async ({ params, request, set }) => {
        const group = await groups.get(parseGroupId(params.id))
        if (group === null) throw notFound('No group with this id')
        const etag = etagOf(group)
        set.headers.etag = etag
        if (!noneMatch(request.headers.get('if-none-match'), etag)) {
          return new Response(null, { status: 304 })
        }
        return toGroupView(group)
      },
      {
        ...read.hook,
        detail: {
          tags,
          summary: 'Get a group',
          description: 'Carries an ETag; If-None-Match with it answers 304.',
          security: read.security,
          ...headerParameters(IF_NONE_MATCH),
          responses: {
            ...documented({ 200: GroupView, ...errorResponses('NOT_FOUND') }),
            304: { description: 'Not modified: If-None-Match holds the current ETag' },
          },
        },
      },
    )
    .put(
      '/groups/:id',
      async ({ params, body, request, set }) => {
        const id = parseGroupId(params.id)
        const group = await groups.update(
          id,
          { name: body.name, description: body.description ?? null },
          {
            versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
            echo: { id: body.id, created_at: body.created_at, updated_at: body.updated_at },
          },
          auditSourceOf(set),
        )
        return answer(group, set)
      },
      {
        ...replace.hook,
        parse: jsonBody(),
        body: ReplaceGroupBody,
        detail: {
          tags,
          summary: 'Replace a group',
          description:
            'name is required; description is set to what is given (null when left out). id, created_at and updated_at may be echoed back and are ignored when they match; members is ignored (memberships have their own routes). If-Match that does not match the ETag is 412.',
          security: replace.security,
          ...headerParameters(IF_MATCH),
          responses: WRITE_RESPONSES,
        },
      },
    )
    .patch(
      '/groups/:id',
      async ({ params, body, request, set }) => {
        const group = await groups.update(
          parseGroupId(params.id),
          body,
          {
            versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
          },
          auditSourceOf(set),
        )
        return answer(group, set)
      },
      {
        ...patch.hook,
        parse: jsonBody(['application/json', 'application/merge-patch+json']),
        body: PatchGroupBody,
        detail: {
          tags,
          summary: 'Update some fields of a group',
          description:
            'application/json or application/merge-patch+json with name and/or description (null clears it). If-Match that does not match the ETag is 412.',
          security: patch.security,
          ...headerParameters(IF_MATCH),
          responses: WRITE_RESPONSES,
        },
      },
    )
    .delete(
      '/groups/:id',
      async ({ params, request, set }) => {
        const id = parseGroupId(params.id)
        await groups.remove(
          id,
          {
            versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
          },
          auditSourceOf(set),
        )
        return { id, deleted: true as const }
      },
      {
        ...remove.hook,
        detail: {
          tags,
          summary: 'Delete a group',
          description:
            'Its memberships go with it; its users stay. If-Match that does not match is 412.',
          security: remove.security,
          ...headerParameters(IF_MATCH),
          responses: documented({
            200: DeletedGroup,
            ...errorResponses('NOT_FOUND', 'PRECONDITION_FAILED'),
          }),
        },
      },
    )
    .put('/groups/:id/members/:userId', ({ params, set }) => membership(params, set, true), {
      ...join.hook,
      detail: { ...membershipDocs(true), security: join.security },
    })
    .delete('/groups/:id/members/:userId', ({ params, set }) => membership(params, set, false), {
      ...leave.hook,
      detail: { ...membershipDocs(false), security: leave.security },
    })
}
