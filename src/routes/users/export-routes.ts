import { Elysia } from 'elysia'
import { NO_STORE } from '../../http/credentials'
import { documented, errorResponses } from '../../http/openapi-schemas'
import { QueryReader } from '../../http/query'
import type { UserStore } from '../../users/store'
import { exportChunks, type TransferFormat } from '../../users/transfer'
import type { AuthPlugin } from '../auth/plugin'
import { guardOf, type UsersAccess } from '../authorisation'

const MEDIA_TYPES: Record<TransferFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
}

/** Over HTTP: never password hashes, nor SCIM profiles (users:read does not cover SCIM's data). */
const HTTP_EXPORT = { passwordHashes: false, scimProfiles: false }

/**
 * GET /users/export?format=csv|jsonl (API key): every user, streamed, the same lines as
 * `roster users export` (never the password hashes: those leave only through the CLI).
 */
export function userExportRoutes(
  inputs: {
    auth: AuthPlugin
    users: Pick<UserStore, 'exportAll'>
    clock: () => number
    usersAccess: UsersAccess
  },
  prefix: '' | '/v1' | '/v2',
) {
  const { auth, users, clock } = inputs
  const guard = guardOf('GET /users/export', inputs.usersAccess)
  return new Elysia({ prefix }).use(auth).get(
    '/users/export',
    ({ request }) => {
      const query = new QueryReader(request.url)
      const format = query.oneOf('format', ['jsonl', 'csv'] as const, 'jsonl')
      query.assertValid()
      const day = new Date(clock()).toISOString().slice(0, 10)
      return new Response(streamText(exportChunks(users.exportAll(), format, HTTP_EXPORT)), {
        headers: {
          'content-type': MEDIA_TYPES[format],
          'content-disposition': `attachment; filename="roster-users-${day}.${format}"`,
          'cache-control': NO_STORE,
        },
      })
    },
    {
      ...guard.hook,
      detail: {
        tags: ['users'],
        summary: 'Export every user (users:read)',
        description:
          'Streams every user, oldest first, as JSON Lines (format=jsonl, the default) or CSV with a header row (format=csv): id, name, email, username, active, role, email_verified_at, created_at, updated_at, and in JSON Lines groups (their names). The same lines as `roster users export` without its SCIM profiles; password hashes are never exported over HTTP. CSV cannot carry groups. One consistent snapshot, however long it streams.',
        security: guard.security,
        parameters: [
          {
            name: 'format',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: ['jsonl', 'csv'], default: 'jsonl' },
          },
        ],
        responses: {
          200: {
            description: 'The users, one per line',
            content: {
              'application/x-ndjson': { schema: { type: 'string' } },
              'text/csv': { schema: { type: 'string' } },
            },
          },
          ...documented(errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'VALIDATION_ERROR')),
        },
      },
    },
  )
}

/**
 * The chunks as a byte stream, pulled as the client reads (a chunk is a batch of users: flat
 * in memory); a client that goes away ends the iteration, which closes the snapshot.
 */
function streamText(chunks: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next()
      if (next.done === true) controller.close()
      else controller.enqueue(encoder.encode(next.value))
    },
    async cancel() {
      await chunks.return(undefined)
    },
  })
}
