/**
 * What HTTP itself adds to roster's operations, for the OpenAPI document: the response headers
 * clients act on, HEAD beside every GET, OPTIONS on every path, and which fields the server
 * alone writes. Elysia's generator knows none of these; publish() adds them.
 */

type Json = Record<string, unknown>
type Operation = Json & { responses: Record<string, Json> }

const header = (description: string, schema: Json = { type: 'string' }) => ({ description, schema })

/** components/headers: each described once, referred to from the responses that carry it. */
export const HEADERS: Record<string, Json> = {
  ETag: header(
    'The version of the record ("id.version" for users and groups, the SHA-256 for files): send it back as If-Match to change only what you read, or If-None-Match for a 304.',
  ),
  Location: header('Where the created resource is read.', {
    type: 'string',
    format: 'uri-reference',
  }),
  Link: header(
    'RFC 8288 links to the first, prev, next and last pages (last only when the total is counted), keeping the query.',
  ),
  'X-Total-Count': header('The total the page counts (pagination.total).', {
    type: 'integer',
    minimum: 0,
  }),
  'Retry-After': header('Seconds to wait before trying again.', { type: 'integer', minimum: 0 }),
  'RateLimit-Limit': header('With --rate-limit: the requests a client may make per window.', {
    type: 'integer',
  }),
  'RateLimit-Remaining': header('With --rate-limit: the requests left in this window.', {
    type: 'integer',
  }),
  'RateLimit-Reset': header('With --rate-limit: seconds until the window refills.', {
    type: 'integer',
  }),
  'RateLimit-Policy': header('With --rate-limit: the policy, as `limit;w=seconds`.'),
  Allow: header('The methods the path answers.'),
}

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` })
const RATE_LIMIT = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy']

/** Paths whose records answer with an ETag (and take If-Match / If-None-Match). */
const VERSIONED =
  /^(?:\/v2)?\/(?:users|groups)\/\{id\}$|^(?:\/v2)?\/files\/\{id\}$|^\/scim\/v2\/(?:Users|Groups)\/\{id\}$/

function addHeaders(response: Json, names: readonly string[]): void {
  if (names.length === 0) return
  const headers = (response.headers ?? {}) as Json
  for (const name of names) headers[name] ??= ref(name)
  response.headers = headers
}

/** The schema a response gives for JSON, if any. */
function jsonSchemaOf(response: Json): Json | undefined {
  const content = response.content as Record<string, { schema?: Json }> | undefined
  return (content?.['application/json'] ?? content?.['application/scim+json'])?.schema
}

function isPage(schema: Json | undefined, components: Json): boolean {
  const target =
    typeof schema?.$ref === 'string'
      ? (components[schema.$ref.replace('#/components/schemas/', '')] as Json | undefined)
      : schema
  const properties = target?.properties as Json | undefined
  return properties?.data !== undefined && properties?.pagination !== undefined
}

/**
 * The response headers of one operation: Location on a 201, ETag where the path's records are
 * versioned, Link and X-Total-Count on a page, Retry-After on a 429, and the rate limit's
 * headers wherever --rate-limit counts.
 */
export function documentResponseHeaders(
  path: string,
  method: string,
  operation: Operation,
  limited: boolean,
  components: Json,
): void {
  for (const [status, response] of Object.entries(operation.responses)) {
    const success = status.startsWith('2')
    const names: string[] = []
    if (status === '201') names.push('Location')
    if (success && status !== '204' && VERSIONED.test(path) && method !== 'delete') {
      names.push('ETag')
    }
    if (status === '200' && method === 'get' && isPage(jsonSchemaOf(response), components)) {
      names.push('Link', 'X-Total-Count')
    }
    if (status === '429') names.push('Retry-After')
    if (limited && (success || status === '429')) names.push(...RATE_LIMIT)
    addHeaders(response, names)
  }
}

/**
 * HEAD beside a GET: the same parameters, security and statuses, with the GET's headers and no
 * body. SCIM defines no HEAD (RFC 7644), so its paths have none.
 */
export function headOf(get: Operation): Operation {
  const responses: Record<string, Json> = {}
  for (const [status, response] of Object.entries(get.responses)) {
    const { content: _content, ...rest } = response
    responses[status] = rest
  }
  return {
    ...get,
    operationId: `head${String(get.operationId ?? '').replace(/^get/, '')}`,
    ...(get.summary === undefined ? {} : { summary: `${get.summary} (headers only)` }),
    description: 'The GET’s status and headers, without its body.',
    responses,
  }
}

/** OPTIONS: 204 with Allow on any path (and a CORS preflight's headers when it is one). */
export function optionsOf(path: string, item: Record<string, Operation>, tags: unknown): Operation {
  const parameters = [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }))
  const methods = Object.keys(item).map((method) => method.toUpperCase())
  return {
    operationId: `options${String(item.get?.operationId ?? item.post?.operationId ?? path)
      .replace(/^(get|post|put|patch|delete)/, '')
      .replace(/[^A-Za-z0-9]/g, '')}`,
    summary: `The methods ${path} answers`,
    description: `Answers 204 with Allow (here: ${methods.join(', ')}, OPTIONS); a CORS preflight (Origin and Access-Control-Request-Method) gets the Access-Control-Allow-* headers instead.`,
    ...(tags === undefined ? {} : { tags }),
    ...(parameters.length === 0 ? {} : { parameters }),
    security: [],
    responses: {
      '204': { description: 'The methods this path answers', headers: { Allow: ref('Allow') } },
    },
  }
}

/** Fields only the server writes: marked readOnly wherever a response shows them. */
const SERVER_WRITTEN = new Set(['id', 'created_at', 'updated_at'])

export function markReadOnly(schema: unknown): void {
  if (schema === null || typeof schema !== 'object') return
  if (Array.isArray(schema)) {
    for (const item of schema) markReadOnly(item)
    return
  }
  const record = schema as Json
  const properties = record.properties as Record<string, Json> | undefined
  if (properties !== undefined && typeof properties === 'object') {
    for (const [name, property] of Object.entries(properties)) {
      if (SERVER_WRITTEN.has(name) && property !== null && typeof property === 'object') {
        property.readOnly = true
      }
      markReadOnly(property)
    }
  }
  for (const [key, value] of Object.entries(record)) {
    if (key !== 'properties') markReadOnly(value)
  }
}

/**
 * A download's media types, as roster sends them: passive types (images but SVG, plain text,
 * PDF, audio, video) with their own type and inline, everything else as an
 * application/octet-stream attachment (docs/uploads.md, "Downloads").
 */
const DOWNLOAD_TYPES = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'text/plain',
  'application/pdf',
  'audio/*',
  'video/*',
  'application/octet-stream',
]

export function documentDownload(operation: Operation): void {
  const bytes = { schema: { type: 'string', format: 'binary' } }
  const content = Object.fromEntries(DOWNLOAD_TYPES.map((type) => [type, bytes]))
  for (const status of ['200', '206']) {
    const response = operation.responses[status]
    if (response !== undefined) response.content = content
  }
}
