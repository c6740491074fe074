import { type Context, type DocumentDecoration, Elysia } from 'elysia'
import { hashPassword } from '../auth/passwords'
import { authPlugin } from '../auth/plugin'
import { ANY_CREDENTIAL_SECURITY, ANY_SCHEME, principalKey, principalOf } from '../auth/principal'
import { parseRowId } from '../db/row-id'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/errors'
import { noneMatch } from '../http/conditional'
import { jsonBody } from '../http/json-body'
import { jsonResponse } from '../http/json-response'
import {
  documented,
  errorResponses,
  type HeaderParameter,
  headerParameters,
  OFFSET_PAGE_PARAMETERS,
} from '../http/openapi-schemas'
import {
  type LinkTargets,
  lastOffset,
  linkHeader,
  offsetPageAnswer,
  readPage,
} from '../http/pagination'
import { QueryReader } from '../http/query'
import { publicBaseUrl } from '../http/request-context'
import { idempotencyKeyOf, type StoredAnswer } from '../idempotency/store'
import { readCursor, writeCursor } from './cursor'
import { etagOf, versionsFromIfMatch } from './etag'
import { toView, type WriteGuard } from './records'
import {
  CreateUserBody,
  DeletedUser,
  MAX_EMAIL_LENGTH,
  PatchUserBody,
  ReplaceUserBody,
  UserPage,
  UserPageV2,
  UserView,
} from './schema'
import type { SearchResult } from './search'

export type ApiVersion = 1 | 2

/** The numeric id from the path; a malformed one is answered like a missing user (404). */
export function parseUserId(text: string): number {
  const id = parseRowId(text)
  if (id === null) throw notFound('No user with this id')
  return id
}

type Parameters = NonNullable<DocumentDecoration['parameters']>

const IDEMPOTENCY_KEY: HeaderParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255 },
  description:
    'Makes the create safe to retry: the same key with the same body replays the first answer for 24 h.',
}
const IF_MATCH: HeaderParameter = {
  name: 'If-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'The ETag you read; if the record changed since, the answer is 412.',
}
const IF_NONE_MATCH: HeaderParameter = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'An ETag you hold; while it is current the answer is 304 with no body.',
}

const V2_PARAMETERS: Parameters = [
  ...OFFSET_PAGE_PARAMETERS,
  {
    name: 'cursor',
    in: 'query',
    schema: { type: 'string' },
    description: 'next_cursor of the previous page; do not combine with offset',
  },
  {
    name: 'email',
    in: 'query',
    schema: { type: 'string' },
    description: 'exact email, compared without regard to case',
  },
  {
    name: 'q',
    in: 'query',
    schema: { type: 'string', maxLength: 200 },
    description: 'substring of name or email',
  },
]

const tags = ['users']

const WRITE_RESPONSES = {
  200: UserView,
  ...errorResponses(
    'BAD_REQUEST',
    'NOT_FOUND',
    'CONFLICT',
    'PRECONDITION_FAILED',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'VALIDATION_ERROR',
  ),
}

/**
 * /users under one prefix ('', '/v1' or '/v2'). The routes are the same for every version
 * except the list, which v2 extends with keyset cursors and filters.
 */
export function usersRoutes(deps: Deps, prefix: '' | '/v1' | '/v2', version: ApiVersion) {
  const { users, idempotency, config } = deps
  const listPath = `${prefix}/users`
  const access = usersAccess(config.usersAccess)

  /** PUT and PATCH: the caller may write, the password is hashed, the guarded update runs. */
  async function applyUpdate(
    rawId: string,
    body: { name?: string; email?: string; password?: string },
    set: Context['set'],
    guard: WriteGuard,
  ) {
    const id = parseUserId(rawId)
    access.mayWrite(set, id)
    const passwordHash = body.password === undefined ? undefined : await hashPassword(body.password)
    const user = await users.update(id, { name: body.name, email: body.email, passwordHash }, guard)
    set.headers.etag = etagOf(user)
    return toView(user)
  }

  const app = new Elysia({ prefix }).use(authPlugin(deps))
  const withList =
    version === 1
      ? app.get(
          '/users',
          ({ request, set }) =>
            offsetPageAnswer(request, set, {
              path: listPath,
              publicUrl: config.publicUrl,
              list: (page) => users.list(page),
            }),
          {
            ...access.read,
            detail: {
              ...access.readDocs,
              tags,
              summary: 'List users',
              description:
                'Ordered by id. Headers: X-Total-Count, and Link with first, prev, next and last.',
              parameters: OFFSET_PAGE_PARAMETERS,
              responses: documented({ 200: UserPage, ...errorResponses('VALIDATION_ERROR') }),
            },
          },
        )
      : app.get(
          '/users',
          ({ request, set }) => {
            const query = new QueryReader(request.url)
            const page = readPage(query)
            const cursorText = query.string('cursor')
            const cursor = cursorText === undefined ? undefined : readCursor(cursorText, query)
            if (cursorText !== undefined && query.has('offset')) {
              query.reject('offset', 'cannot be combined with cursor', query.string('offset'))
            }
            const filters = {
              email: query.string('email', { maxLength: MAX_EMAIL_LENGTH }),
              q: query.string('q', { maxLength: 200 }),
            }
            query.assertValid()
            const result = users.search({ ...page, cursor, filters })
            const nextCursor = result.next === null ? null : writeCursor(result.next)
            set.headers['x-total-count'] = String(result.total)
            set.headers.link = linkHeader({
              base: publicBaseUrl(request, config.publicUrl),
              path: listPath,
              limit: page.limit,
              keep: filters,
              targets: v2Targets(page.limit, result, nextCursor),
            })
            return {
              data: result.data,
              pagination: {
                limit: page.limit,
                offset: result.offset,
                total: result.total,
                next_cursor: nextCursor,
              },
            }
          },
          {
            ...access.read,
            detail: {
              ...access.readDocs,
              tags,
              summary: 'List users (v2: cursor and filters)',
              description:
                'v1 plus keyset pagination (cursor, next_cursor) and the email and q filters; total counts the matching records. On a page chosen by cursor, offset is null: counting the records before a cursor would cost what the cursor saves.',
              parameters: V2_PARAMETERS,
              responses: documented({ 200: UserPageV2, ...errorResponses('VALIDATION_ERROR') }),
            },
          },
        )

  return withList
    .post(
      '/users',
      async ({ body, request, set }) => {
        access.mayWrite(set)
        const key = idempotencyKeyOf(request)
        const scope = `${principalKey(principalOf(set))}:POST /users`
        const fingerprint = key === null ? '' : idempotency.fingerprint(body)
        const earlier = key === null ? null : idempotency.lookup(scope, key, fingerprint)
        if (earlier !== null) return replay(earlier)

        const passwordHash = body.password === undefined ? null : await hashPassword(body.password)
        const input = { name: body.name, email: body.email, passwordHash }
        if (key === null) {
          const user = await users.create(input)
          set.status = 201
          set.headers.location = `${listPath}/${user.id}`
          return toView(user)
        }
        const { replayed, answer } = await idempotency.once(scope, key, fingerprint, () => {
          const user = users.inWrite.create(input)
          return {
            status: 201,
            body: JSON.stringify(toView(user)),
            location: `${listPath}/${user.id}`,
          }
        })
        return replayed ? replay(answer) : answerWith(answer)
      },
      {
        ...access.write,
        parse: jsonBody(),
        body: CreateUserBody,
        detail: {
          ...access.writeDocs,
          tags,
          summary: 'Create a user',
          ...headerParameters(IDEMPOTENCY_KEY),
          responses: documented({
            201: UserView,
            ...errorResponses(
              'BAD_REQUEST',
              'CONFLICT',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
            ),
          }),
          description:
            'Answers 201 with Location. With an Idempotency-Key header, a retry with the same body replays the first answer for 24 h (Idempotent-Replayed: true); the same key with another body is 409.',
        },
      },
    )
    .get(
      '/users/:id',
      ({ params, request, set }) => {
        const user = users.get(parseUserId(params.id))
        if (user === null) throw notFound('No user with this id')
        const etag = etagOf(user)
        set.headers.etag = etag
        if (!noneMatch(request.headers.get('if-none-match'), etag)) {
          return new Response(null, { status: 304 })
        }
        return toView(user)
      },
      {
        ...access.read,
        detail: {
          ...access.readDocs,
          tags,
          summary: 'Get a user',
          ...headerParameters(IF_NONE_MATCH),
          responses: {
            ...documented({ 200: UserView, ...errorResponses('NOT_FOUND') }),
            304: { description: 'Not modified: If-None-Match holds the current ETag' },
          },
          description: 'Carries an ETag; If-None-Match with it answers 304.',
        },
      },
    )
    .put(
      '/users/:id',
      ({ params, body, request, set }) =>
        applyUpdate(params.id, body, set, {
          versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
          echo: { id: body.id, created_at: body.created_at, updated_at: body.updated_at },
        }),
      {
        ...access.write,
        parse: jsonBody(),
        body: ReplaceUserBody,
        detail: {
          ...access.writeDocs,
          tags,
          summary: 'Replace a user',
          ...headerParameters(IF_MATCH),
          responses: documented(WRITE_RESPONSES),
          description:
            'name and email are required; password is changed only when given. id, created_at and updated_at may be echoed back and are ignored when they match. If-Match that does not match the ETag is 412.',
        },
      },
    )
    .patch(
      '/users/:id',
      ({ params, body, request, set }) =>
        applyUpdate(params.id, body, set, {
          versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
        }),
      {
        ...access.write,
        parse: jsonBody(['application/json', 'application/merge-patch+json']),
        body: PatchUserBody,
        detail: {
          ...access.writeDocs,
          tags,
          summary: 'Update some fields of a user',
          ...headerParameters(IF_MATCH),
          responses: documented(WRITE_RESPONSES),
          description:
            'application/json or application/merge-patch+json with at least one of name, email, password. If-Match that does not match the ETag is 412.',
        },
      },
    )
    .delete(
      '/users/:id',
      async ({ params, request, set }) => {
        const id = parseUserId(params.id)
        access.mayWrite(set, id)
        await users.remove(id, {
          versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
        })
        return { id, deleted: true as const }
      },
      {
        ...access.write,
        detail: {
          ...access.writeDocs,
          tags,
          summary: 'Delete a user',
          ...headerParameters(IF_MATCH),
          description: 'If-Match that does not match is 412.',
          responses: documented({
            200: DeletedUser,
            ...errorResponses('NOT_FOUND', 'PRECONDITION_FAILED'),
          }),
        },
      },
    )
}

/** Links for a v2 page: offsets where the position is known, cursors where it is not. */
function v2Targets(limit: number, result: SearchResult, nextCursor: string | null): LinkTargets {
  const { prev } = result
  return {
    first: { offset: 0 },
    prev: prev === null ? undefined : 'offset' in prev ? prev : { cursor: writeCursor(prev) },
    next: nextCursor === null ? undefined : { cursor: nextCursor },
    last: { offset: lastOffset(result.total, limit) },
  }
}

/**
 * The --users-access rule. `open`: no credential is asked for. `protected`: reads need any
 * valid credential; creating a user needs an API key; changing or deleting one needs an API
 * key or that user's own credential (403 otherwise).
 */
function usersAccess(mode: 'open' | 'protected') {
  const isProtected = mode === 'protected'
  const guard = isProtected ? { auth: { schemes: ANY_SCHEME } } : {}
  const docs = isProtected ? { security: ANY_CREDENTIAL_SECURITY } : {}
  return {
    read: guard,
    write: guard,
    readDocs: docs,
    writeDocs: docs,
    mayWrite(set: object, targetId?: number): void {
      if (!isProtected) return
      const principal = principalOf(set)
      if (principal?.kind === 'apiKey') return
      if (principal?.kind === 'user' && principal.userId === targetId) return
      throw new AppError(
        'FORBIDDEN',
        targetId === undefined
          ? 'Creating users needs an API key'
          : 'Only the user itself or an API key may change this record',
      )
    },
  }
}

/** A stored answer as a Response: the first answer to a key, and every replay of it. */
function answerWith(answer: StoredAnswer, extra: Record<string, string> = {}): Response {
  const headers = answer.location === null ? extra : { ...extra, location: answer.location }
  return jsonResponse(answer.body, answer.status, headers)
}

function replay(answer: StoredAnswer): Response {
  return answerWith(answer, { 'idempotent-replayed': 'true' })
}
