import type { DocumentDecoration } from 'elysia'
import {
  documented,
  errorResponses,
  type HeaderParameter,
  OFFSET_PAGE_PARAMETERS,
} from '../../http/openapi-schemas'
import { MAX_EMAIL_LENGTH } from '../../users/fields'
import { MAX_QUERY_LENGTH, SORT_CHOICES } from '../../users/search'
import { UserPage, UserPageV2, UserView } from './schema'
import { COUNT_CHOICES } from './v2-list'

// The OpenAPI parts of the /users routes that are not their schemas.

type Parameters = NonNullable<DocumentDecoration['parameters']>

export const IDEMPOTENCY_KEY: HeaderParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255 },
  description:
    'Makes the create safe to retry: the same key with the same body replays the first answer for 24 h.',
}
export const IF_MATCH: HeaderParameter = {
  name: 'If-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'The ETag you read; if the record changed since, the answer is 412.',
}
export const IF_NONE_MATCH: HeaderParameter = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'An ETag you hold; while it is current the answer is 304 with no body.',
}

export const V2_PARAMETERS: Parameters = [
  ...OFFSET_PAGE_PARAMETERS,
  {
    name: 'cursor',
    in: 'query',
    schema: { type: 'string' },
    description:
      'next_cursor of the previous page (or a cursor from the Link header); send the same limit, filters and sort with it; do not combine with offset',
  },
  {
    name: 'sort',
    in: 'query',
    schema: { type: 'string', enum: [...SORT_CHOICES], default: 'id' },
    description:
      'id: creation order; name: the name without regard to case or accents, then the email; email: the email without regard to case. A leading - reverses. Ties go by id; text compares by code point, the same on every database.',
  },
  {
    name: 'email',
    in: 'query',
    schema: { type: 'string', maxLength: MAX_EMAIL_LENGTH },
    description: 'exact email, compared without regard to case',
  },
  {
    name: 'q',
    in: 'query',
    schema: { type: 'string', maxLength: MAX_QUERY_LENGTH },
    description:
      'substring of name or email, without regard to case or accents ("jose" finds "José"); from 3 characters through an index, shorter ones read every user',
  },
  {
    name: 'count',
    in: 'query',
    schema: { type: 'string', enum: [...COUNT_CHOICES], default: 'exact' },
    description:
      'none: leave total, X-Total-Count and the last link out, for a client paging a large roster by cursor',
  },
]

export const tags = ['users']

export const WRITE_RESPONSES = {
  200: UserView,
  ...errorResponses(
    'BAD_REQUEST',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'REAUTHENTICATION_REQUIRED',
    'RATE_LIMITED',
    'NOT_FOUND',
    'CONFLICT',
    'PRECONDITION_FAILED',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'VALIDATION_ERROR',
  ),
}

export const LIST_V1_DOCS = {
  tags,
  summary: 'List users',
  description:
    'Ordered by id. Headers: X-Total-Count, and Link with first, prev, next and last. total is a count kept with every insert and delete, exact and not counted per request.',
  parameters: OFFSET_PAGE_PARAMETERS,
  responses: documented({ 200: UserPage, ...errorResponses('VALIDATION_ERROR') }),
} satisfies DocumentDecoration

export const LIST_V2_DOCS = {
  tags,
  summary: 'List users (v2: cursor and filters)',
  description:
    'v1 plus keyset pagination (cursor, next_cursor), the email and q filters and a sort; total counts the matching records. On a page chosen by cursor, offset is null: counting the records before a cursor would cost what the cursor saves.',
  parameters: V2_PARAMETERS,
  responses: documented({ 200: UserPageV2, ...errorResponses('VALIDATION_ERROR') }),
} satisfies DocumentDecoration
