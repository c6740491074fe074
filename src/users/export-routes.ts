import { Elysia } from 'elysia'
import { authPlugin } from '../auth/plugin'
import type { Deps } from '../deps'
import { documented, errorResponses } from '../http/openapi-schemas'
import { QueryReader } from '../http/query'
import { exportLines, type TransferFormat } from './transfer'

const MEDIA_TYPES: Record<TransferFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
}
/** Lines per chunk of the stream: big enough to be cheap, small enough to stay flat in memory. */
const LINES_PER_CHUNK = 500

/**
 * GET /users/export?format=csv|jsonl (API key): every user, streamed, the same lines as
 * `roster users export` (never the password hashes: those leave only through the CLI).
 */
export function userExportRoutes(deps: Deps, prefix: '' | '/v1' | '/v2') {
  return new Elysia({ prefix }).use(authPlugin(deps)).get(
    '/users/export',
    ({ request }) => {
      const query = new QueryReader(request.url)
      const format = query.oneOf('format', ['jsonl', 'csv'] as const, 'jsonl')
      query.assertValid()
      const day = new Date(deps.clock()).toISOString().slice(0, 10)
      return new Response(streamLines(exportLines(deps.users.exportSnapshot(), format, false)), {
        headers: {
          'content-type': MEDIA_TYPES[format],
          'content-disposition': `attachment; filename="roster-users-${day}.${format}"`,
          'cache-control': 'no-store',
        },
      })
    },
    {
      auth: { schemes: ['apiKey'] },
      detail: {
        tags: ['users'],
        summary: 'Export every user (API key)',
        description:
          'Streams every user, oldest first, as JSON Lines (format=jsonl, the default) or CSV with a header row (format=csv): id, name, email, created_at, updated_at. The same lines as `roster users export`; password hashes are never exported over HTTP. One consistent snapshot, however long it streams.',
        security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
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

/** The lines as a byte stream, pulled as the client reads; abandoned lines close the snapshot. */
function streamLines(lines: Generator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      let chunk = ''
      for (let n = 0; n < LINES_PER_CHUNK; n++) {
        const next = lines.next()
        if (next.done === true) {
          if (chunk !== '') controller.enqueue(encoder.encode(chunk))
          controller.close()
          return
        }
        chunk += next.value
      }
      controller.enqueue(encoder.encode(chunk))
    },
    cancel() {
      lines.return(undefined)
    },
  })
}
