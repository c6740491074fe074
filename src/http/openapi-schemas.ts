import { type TSchema, Type } from '@sinclair/typebox'
import { type DocumentDecoration, t } from 'elysia'
import type { Chronology } from '../db/page'
import { ERROR_CODES, type ErrorCode } from '../errors/errors'
import { CREATED_SORTS, DEFAULT_LIMIT, MAX_LIMIT } from './pagination'

/** A page's `limit` as every list answers it: the bounds pagination.ts enforces. */
export const PageLimit = Type.Integer({ minimum: 1, maximum: MAX_LIMIT })

/** The pagination of every offset-paginated list (`/users` v1, `/api-keys`, `/uploads`, events). */
export const OffsetPagination = t.Object({
  limit: PageLimit,
  offset: Type.Integer({ minimum: 0 }),
  total: Type.Integer({ minimum: 0 }),
})

/** `limit` and `offset`, as every offset-paginated list takes them (see pagination.ts). */
export const OFFSET_PAGE_PARAMETERS: NonNullable<DocumentDecoration['parameters']> = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
]

/**
 * `limit`, `offset` and `sort` of a list in creation order that `sort` may turn around
 * (pagination.ts's offsetPageAnswer with `usually`).
 */
export function chronologicalListParameters(
  usually: Chronology,
): NonNullable<DocumentDecoration['parameters']> {
  return [
    ...OFFSET_PAGE_PARAMETERS,
    {
      name: 'sort',
      in: 'query',
      schema: {
        type: 'string',
        enum: [...CREATED_SORTS],
        default: usually === 'newest' ? '-created' : 'created',
      },
      description: 'created: oldest first; -created: newest first (ties in creation order)',
    },
  ]
}

/** The common list envelope: `{ data: [item…], pagination: { limit, offset, total } }`. */
export const offsetPageOf = <T extends TSchema>(item: T) =>
  t.Object({ data: t.Array(item), pagination: OffsetPagination })

export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      code: t.String({ enum: Object.keys(ERROR_CODES) }),
      message: t.String(),
      details: t.Array(
        t.Object({
          field: t.String(),
          message: t.String(),
          received: t.String({
            maxLength: 200,
            description:
              'The rejected input as text (cut to 200 characters); "" when the field was absent; "[redacted]" for a secret.',
          }),
        }),
      ),
      documentation_url: t.String({ format: 'uri' }),
    }),
    request_id: t.String(),
  },
  { description: 'The error envelope every non-2xx answer with a body uses.' },
)

/** OpenAPI response entries for the error codes a route can answer with. */
export function errorResponses(...codes: ErrorCode[]) {
  const responses: Record<number, typeof ErrorEnvelope> = {}
  for (const code of codes) {
    const status = ERROR_CODES[code].status
    const existing = responses[status]
    const names = existing === undefined ? code : `${existing.description}, ${code}`
    responses[status] = t.Object(ErrorEnvelope.properties, { description: names })
  }
  return responses
}

/**
 * Documents a route's answers in OpenAPI without Elysia re-validating every answer at runtime
 * (2 µs per page of users): answers are built field by field, and test/docs checks real answers
 * against this document.
 */
export function documented(responses: Record<number, TSchema>) {
  return Object.fromEntries(
    Object.entries(responses).map(([status, schema]) => [
      status,
      {
        description: schema.description ?? `HTTP ${status}`,
        content: { 'application/json': { schema } },
      },
    ]),
  )
}

export interface HeaderParameter {
  name: string
  in: 'header'
  required?: boolean
  schema: object
  description?: string
}

/** Where a route's header parameters wait for the document (see headerParameters). */
export const HEADER_PARAMETERS = 'x-roster-header-parameters'

/**
 * Documents request headers a route reads itself (If-Match, Idempotency-Key). Elysia replaces
 * `detail.parameters` with the path parameters it finds, so they ride under an extension key
 * that src/docs/openapi.ts moves into `parameters` when it publishes the document.
 */
export function headerParameters(
  ...parameters: HeaderParameter[]
): Record<typeof HEADER_PARAMETERS, HeaderParameter[]> {
  return { [HEADER_PARAMETERS]: parameters }
}
