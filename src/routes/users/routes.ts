import { type Context, Elysia } from 'elysia'
import type { AccountFlows } from '../../accounts/flows'
import type { Role } from '../../auth/access'
import { hashPassword } from '../../auth/passwords'
import { isUser, principalKey } from '../../auth/principal'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import type { Transaction } from '../../db/unit'
import { fieldDetail } from '../../errors/details'
import { notFound, validationFailed } from '../../errors/errors'
import { clientIp } from '../../http/client'
import { noneMatch } from '../../http/conditional'
import { jsonBody } from '../../http/json-body'
import { linkBase } from '../../http/link-base'
import { documented, errorResponses, headerParameters } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import {
  checkedIdempotencyKey,
  type IdempotencyClaims,
  type IdempotencyStore,
} from '../../idempotency/store'
import {
  authorizeCredentialChange,
  type CredentialChangeDeps,
} from '../../users/credential-changes'
import { toView, type WriteGuard } from '../../users/records'
import type { UserStore, UserWrites } from '../../users/store'
import type { AuthPlugin } from '../auth/plugin'
import { auditSourceOf, principalOf, requestIdOf } from '../auth/principal'
import { usersAccess } from './access'
import { etagOf, versionsFromIfMatch } from './etag'
import { createdAnswer, createOnce, replay } from './idempotent-answers'
import {
  IDEMPOTENCY_KEY,
  IF_MATCH,
  IF_NONE_MATCH,
  LIST_V1_DOCS,
  LIST_V2_DOCS,
  tags,
  WRITE_RESPONSES,
} from './route-docs'
import { CreateUserBody, DeletedUser, PatchUserBody, ReplaceUserBody, UserView } from './schema'
import { v2Page } from './v2-list'

export type ApiVersion = 1 | 2

/** The numeric id from the path; a malformed one is answered like a missing user (404). */
export function parseUserId(text: string): number {
  const id = parseRowId(text)
  if (id === null) throw notFound('No user with this id')
  return id
}

/** What the users routes are given by the composition root. */
export interface UsersRouteInputs {
  auth: AuthPlugin
  users: UserStore
  idempotency: IdempotencyStore
  transaction: Transaction<{ users: UserWrites; idempotency: IdempotencyClaims }>
  /** The door's step-up, for a change of the caller's own password or email. */
  door: CredentialChangeDeps['door']
  /** Runs a write the account makes to itself, mailing the undo notice when it moves away. */
  ownChanges: Pick<AccountFlows, 'changeOwnAccount'>
  config: Pick<Config, 'publicUrl' | 'usersAccess' | 'trustProxy'>
}

type UpdateBody = {
  name?: string
  email?: string
  username?: string
  password?: string
  current_password?: string
  role?: Role
  active?: boolean
}

/**
 * /users under one prefix ('', '/v1' or '/v2'). The routes are the same for every version
 * except the list, which v2 extends with keyset cursors and filters.
 */
export function usersRoutes(
  inputs: UsersRouteInputs,
  prefix: '' | '/v1' | '/v2',
  version: ApiVersion,
) {
  const { auth, users, idempotency, transaction, door, config } = inputs
  const { ownChanges } = inputs
  const listPath = `${prefix}/users`
  const access = usersAccess(config.usersAccess)

  /**
   * PUT and PATCH: the caller may write this record, and may change its password or email
   * (section 11); the password is hashed; the guarded update runs.
   */
  async function applyUpdate(
    rawId: string,
    body: UpdateBody,
    context: Pick<Context, 'set' | 'request' | 'server'>,
    guard: WriteGuard,
  ) {
    const { set, request, server } = context
    const id = parseUserId(rawId)
    access.requireSelf(set, 'users:write', id)
    const fields = [body.name, body.email, body.username, body.password, body.role, body.active]
    if (fields.every((field) => field === undefined)) {
      throw validationFailed([
        fieldDetail(
          'body',
          'must contain at least one of name, email, username, password, role, active',
          body,
        ),
      ])
    }
    const principal = principalOf(set)
    // Asked for only when needed: reading the client's address costs a system call.
    const ipOf = () => clientIp(request, server, config.trustProxy)
    const credentialGuard = await authorizeCredentialChange(
      principal,
      id,
      { password: body.password, email: body.email, currentPassword: body.current_password },
      () => ({ ip: ipOf(), requestId: requestIdOf(set) }),
      { users, door },
    )
    const passwordHash = body.password === undefined ? undefined : await hashPassword(body.password)
    const write = (writes: Pick<UserWrites, 'update'>) =>
      writes.update(
        id,
        {
          name: body.name,
          email: body.email,
          username: body.username,
          passwordHash,
          role: body.role,
          active: body.active,
        },
        {
          ...guard,
          ...credentialGuard,
          // Made only when a role is asked for: most writes carry none.
          refuseRoleChange: body.role === undefined ? undefined : access.roleRefusal(set),
          refuseActiveChange:
            body.active === undefined ? undefined : access.roleRefusal(set, 'active'),
          refuseIfAdmin: access.adminRefusal(set, id),
        },
        auditSourceOf(set),
      )
    // The account moving its own address (CONTRACT section 17): the old one is told, with a
    // link that undoes it. An admin's, a key's, SCIM's or the command line's change is not:
    // the authority that made it undoes it, and the old mailbox may be why it was made.
    const user =
      body.email !== undefined && isUser(principal, id)
        ? await ownChanges.changeOwnAccount(
            id,
            { clientIp: ipOf(), linkBase: linkBase(request, config.publicUrl) },
            write,
          )
        : await write(users)
    set.headers.etag = etagOf(user)
    return toView(user)
  }

  const app = new Elysia({ prefix }).use(auth)
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
            ...access.list.hook,
            detail: { security: access.list.security, ...LIST_V1_DOCS },
          },
        )
      : app.get(
          '/users',
          ({ request, set }) =>
            v2Page(request, set, { users, path: listPath, publicUrl: config.publicUrl }),
          {
            ...access.list.hook,
            detail: { security: access.list.security, ...LIST_V2_DOCS },
          },
        )

  return withList
    .post(
      '/users',
      async ({ body, request, set }) => {
        access.requireRoleAuthority(set, body.role, body.active)
        const key = checkedIdempotencyKey(request.headers.get('idempotency-key'))
        const scope = `${principalKey(principalOf(set))}:POST /users`
        const fingerprint = key === null ? '' : idempotency.fingerprint(body)
        const earlier = key === null ? null : await idempotency.lookup(scope, key, fingerprint)
        if (earlier !== null) return replay(earlier)

        const passwordHash = body.password === undefined ? null : await hashPassword(body.password)
        const input = {
          name: body.name,
          email: body.email,
          username: body.username,
          passwordHash,
          role: body.role,
          active: body.active,
        }
        if (key === null) {
          const { status, view, location } = createdAnswer(
            await users.create(input, auditSourceOf(set)),
            listPath,
          )
          set.status = status
          set.headers.location = location
          return view
        }
        return await createOnce(
          transaction,
          { scope, key, fingerprint },
          input,
          listPath,
          auditSourceOf(set),
        )
      },
      {
        ...access.create.hook,
        parse: jsonBody(),
        body: CreateUserBody,
        detail: {
          security: access.create.security,
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
      async ({ params, request, set }) => {
        const id = parseUserId(params.id)
        access.requireSelf(set, 'users:read', id)
        const user = await users.get(id)
        if (user === null) throw notFound('No user with this id')
        const etag = etagOf(user)
        set.headers.etag = etag
        if (!noneMatch(request.headers.get('if-none-match'), etag)) {
          return new Response(null, { status: 304 })
        }
        return toView(user)
      },
      {
        ...access.get.hook,
        detail: {
          security: access.get.security,
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
      ({ params, body, request, set, server }) =>
        applyUpdate(
          params.id,
          body,
          { set, request, server },
          {
            versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
            echo: { id: body.id, created_at: body.created_at, updated_at: body.updated_at },
          },
        ),
      {
        ...access.replace.hook,
        parse: jsonBody(),
        body: ReplaceUserBody,
        detail: {
          security: access.replace.security,
          tags,
          summary: 'Replace a user',
          ...headerParameters(IF_MATCH),
          responses: documented(WRITE_RESPONSES),
          description:
            'name and email are required; password is changed only when given. id, created_at and updated_at may be echoed back and are ignored when they match. If-Match that does not match the ETag is 412. The password or email of an account that can sign in changes only with an API key or the account’s own credential plus current_password (an account without a password: a sign-in within the last 5 minutes instead; anonymous: 401; another user: 403; without or with a wrong current_password: 403 REAUTHENTICATION_REQUIRED). When the account moves its own address, the old one is mailed a notice with a link that undoes the change for 7 days (POST /auth/email-change-undo/confirm); a change by an admin or a key mails none.',
        },
      },
    )
    .patch(
      '/users/:id',
      ({ params, body, request, set, server }) =>
        applyUpdate(
          params.id,
          body,
          { set, request, server },
          { versions: versionsFromIfMatch(request.headers.get('if-match'), params.id) },
        ),
      {
        ...access.patch.hook,
        parse: jsonBody(['application/json', 'application/merge-patch+json']),
        body: PatchUserBody,
        detail: {
          security: access.patch.security,
          tags,
          summary: 'Update some fields of a user',
          ...headerParameters(IF_MATCH),
          responses: documented(WRITE_RESPONSES),
          description:
            'application/json or application/merge-patch+json with at least one of name, email, password. If-Match that does not match the ETag is 412. The password or email of an account that can sign in changes only with an API key or the account’s own credential plus current_password (an account without a password: a sign-in within the last 5 minutes instead; anonymous: 401; another user: 403; without or with a wrong current_password: 403 REAUTHENTICATION_REQUIRED). When the account moves its own address, the old one is mailed a notice with a link that undoes the change for 7 days (POST /auth/email-change-undo/confirm); a change by an admin or a key mails none.',
        },
      },
    )
    .delete(
      '/users/:id',
      async ({ params, request, set }) => {
        const id = parseUserId(params.id)
        access.requireSelf(set, 'users:write', id)
        await users.remove(
          id,
          {
            versions: versionsFromIfMatch(request.headers.get('if-match'), params.id),
            refuseIfAdmin: access.adminRefusal(set, id),
          },
          auditSourceOf(set),
        )
        return { id, deleted: true as const }
      },
      {
        ...access.remove.hook,
        detail: {
          security: access.remove.security,
          tags,
          summary: 'Delete a user',
          ...headerParameters(IF_MATCH),
          description:
            'If-Match that does not match is 412. The last active admin cannot be deleted (409 CONFLICT).',
          responses: documented({
            200: DeletedUser,
            ...errorResponses('NOT_FOUND', 'PRECONDITION_FAILED', 'CONFLICT'),
          }),
        },
      },
    )
}
