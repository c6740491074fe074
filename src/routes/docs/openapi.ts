import type { AnyElysia } from 'elysia'
import { SCOPE_LIST } from '../../auth/access'
import { ERROR_CODES, type ErrorCode } from '../../errors/errors'
import { HEADER_PARAMETERS } from '../../http/openapi-schemas'
import { SESSION_COOKIE } from '../auth/cookies'
import { nameSchemas } from './named-schemas'
import {
  documentDownload,
  documentResponseHeaders,
  HEADERS,
  headOf,
  markReadOnly,
  optionsOf,
} from './openapi-http'

type Json = Record<string, unknown>

/** Routes every /X also answers as /v1/X: listed once, unversioned. */
const EXCLUDED_PATHS = [/^\/v1\//]
/**
 * The generator leaves out every path with a dot by default (it takes them for static files),
 * which would drop SCIM's `/Users/.search`; the static files here are excluded by path instead.
 */
const STATIC_FILES = /\.(js|css|json|html|png|svg|ico|map)$/

const INFO_DESCRIPTION = [
  'A users API with credentials, uploads and signed webhooks, in one executable.',
  'Unversioned paths are v1; every /X also answers as /v1/X (not listed here) and as /v2/X.',
  'Errors use one envelope, described at /docs/errors; every item of `error.details` has `field`, `message` and `received` (the rejected input as text, "" when absent, "[redacted]" for a secret).',
  'Unknown query parameters are ignored; a known one with a bad value, or given twice, is a VALIDATION_ERROR.',
  'When the server runs with --rate-limit, every route but /health and /metrics may also answer 429 RATE_LIMITED with Retry-After, and carries RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and RateLimit-Policy.',
].join(' ')

function documentation(version: string) {
  return {
    info: {
      title: 'roster',
      version,
      description: INFO_DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'the roster maintainers (see the README of your copy)' },
    },
    servers: [
      {
        url: 'http://127.0.0.1:8080',
        description: 'roster serve on its default address; use your --public-url instead',
      },
    ],
    tags: [
      { name: 'users', description: 'User records' },
      { name: 'groups', description: 'Groups of users (SCIM Groups map onto them)' },
      {
        name: 'scim',
        description:
          "SCIM 2.0 (RFC 7643, RFC 7644) for identity providers: a key with the scim scope as a bearer token; resource and attribute names in any case; every error in SCIM's form",
      },
      { name: 'credentials', description: 'Sign-in, sessions, tokens and API keys' },
      {
        name: 'second factors',
        description:
          'Passkeys (WebAuthn), TOTP and recovery codes: register while signed in, sign in without a password, the second step of /login',
      },
      {
        name: 'account by email',
        description:
          'Verification, password reset, magic links, email changes and invitations, through the mail outbox',
      },
      { name: 'uploads', description: 'Files, streamed to disk' },
      {
        name: 'webhooks',
        description: 'Signed deliveries from Stripe, Standard Webhooks senders and GitHub',
      },
      {
        name: 'audit',
        description: 'Who changed what and when: the audit log and its live feed',
      },
      {
        name: 'webhook endpoints',
        description:
          'Outbound webhooks: the audit log’s events POSTed, signed (Standard Webhooks), to URLs you choose',
      },
      { name: 'operations', description: 'Health and service information' },
    ],
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: `email:password. ${USER_SCOPES}` },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: `access_token from /login. ${USER_SCOPES}`,
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: `from /login. ${USER_SCOPES}`,
        },
        apiKeyHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: KEY_SCOPES,
        },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key', description: KEY_SCOPES },
        bearerApiKey: {
          type: 'http',
          scheme: 'bearer',
          description: `an API key (rk_…) as a bearer token, as Prometheus sends it. ${KEY_SCOPES}`,
        },
      },
    },
  }
}

/**
 * The OpenAPI document of every route registered in `app`'s tree, as published at
 * /swagger/json and by `roster openapi`: Elysia's document, then made to say what the tools
 * people feed it to expect (see publish).
 */
export async function openApiDocument(app: AnyElysia, version: string): Promise<Json> {
  // Loaded when the document is first asked for: the generator is a large module that start-up
  // would otherwise evaluate for every server (spawn to first 200, bench/README).
  const { toOpenAPISchema } = await import('@elysiajs/openapi')
  const { paths, components } = toOpenAPISchema(app, {
    paths: [...EXCLUDED_PATHS, STATIC_FILES],
    staticFile: false,
  })
  const base = documentation(version)
  const document: Json = {
    openapi: '3.1.0',
    ...base,
    paths,
    components: { ...base.components, schemas: components.schemas ?? {} },
  }
  return publish(document)
}

/** What the scopes in an operation's `security` mean, per kind of credential. */
const KEY_SCOPES = `An API key may call an operation when it holds a scope the operation's security lists (${SCOPE_LIST}; \`*\` is every scope, and a \`:write\` scope includes its \`:read\`). Otherwise 403 FORBIDDEN names the scope.`
const USER_SCOPES =
  "A user's credential: an admin holds every scope; a member only reaches its own record and uploads (403 FORBIDDEN naming the scope elsewhere)."

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

const UNLIMITED_PATHS = new Set(
  ['/health', '/health/live', '/health/ready']
    .flatMap((path) => [path, `/v2${path}`])
    .concat('/metrics'),
)
const UNSAFE = new Set(['post', 'put', 'patch', 'delete'])
/** The error envelope, named once in components/schemas (see named-schemas.ts). */
const errorEnvelope: Json = { $ref: '#/components/schemas/Error' }

/**
 * The error answers an operation can give through roster's shared machinery, whatever the
 * route documents itself: a fault (500) or a failing database or disk (503) anywhere; a Host
 * that is not roster's while /users is open (421) anywhere; the rate limit (429) everywhere but
 * /health and /metrics; a malformed query or credential (400) on
 * every route (a query naming `__proto__` is refused before routing); the CSRF guard (403) on unsafe methods; a missing or bad credential (401)
 * where one is taken; a malformed or unknown id (404) where the path has one; a body that is
 * too large, of another type or invalid (413, 415, 422) where one is read; a bad query
 * parameter (422) where the route takes some.
 */
function sharedErrors(method: string, path: string, operation: Json): ErrorCode[] {
  const codes: ErrorCode[] = [
    'INTERNAL_ERROR',
    'SERVICE_UNAVAILABLE',
    'MISDIRECTED_REQUEST',
    'BAD_REQUEST',
  ]
  if (UNLIMITED_PATHS.has(path)) return codes
  codes.push('RATE_LIMITED')
  if (UNSAFE.has(method)) codes.push('FORBIDDEN')
  if (Array.isArray(operation.security) && operation.security.length > 0) {
    codes.push('UNAUTHORIZED')
  }
  if (path.includes('{')) codes.push('NOT_FOUND')
  if (operation.requestBody !== undefined) {
    codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_ERROR')
  }
  const parameters = operation.parameters as { in: string }[] | undefined
  if (parameters?.some((parameter) => parameter.in === 'query')) codes.push('VALIDATION_ERROR')
  return codes
}

/**
 * Completes Elysia's document: strips Elysia's `error` message option from schemas (an unknown
 * keyword to JSON Schema), declares `security: []` on public operations and the path and
 * header parameters routes read themselves, names every operation (`getV2UsersById`), and
 * documents the error answers every operation can give (sharedErrors) where the route did not.
 */
export function publish(source: Json): Json {
  // A copy: Elysia's document shares its schemas with the live validators.
  const document = JSON.parse(JSON.stringify(source)) as Json
  stripErrorOption(document.paths)
  stripErrorOption(document.components)
  nameSchemas(document, cleanSchema)
  const components = document.components as Json & { schemas: Json }
  components.headers = HEADERS
  for (const [name, schema] of Object.entries(components.schemas)) {
    if (!/(?:Create|Replace|Patch)$/.test(name)) markReadOnly(schema)
  }
  const paths = document.paths as Record<string, Record<string, Json>>
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method]
      if (operation === undefined) continue
      operation.security ??= []
      operation.operationId ??= operationId(method, path)
      declarePathParameters(operation, path)
      const headers = operation[HEADER_PARAMETERS] as object[] | undefined
      if (headers !== undefined) {
        operation.parameters = [
          ...((operation.parameters as object[] | undefined) ?? []),
          ...headers,
        ]
        delete operation[HEADER_PARAMETERS]
      }
      operation.responses ??= {}
      if (path.startsWith('/scim/v2')) {
        documentScimErrors(operation.responses as Responses)
      } else {
        documentSharedErrors(
          operation.responses as Responses,
          sharedErrors(method, path, operation),
        )
      }
      markReadOnly(operation.responses)
      // A download's real media types, before HEAD copies the GET's responses.
      if (method === 'get' && DOWNLOAD_PATH.test(path)) documentDownload(operation as never)
      const limited = !UNLIMITED_PATHS.has(path)
      documentResponseHeaders(path, method, operation as never, limited, components.schemas)
    }
    addHeadAndOptions(path, item)
  }
  return document
}

/** The download route, whose GET answers the file's own bytes. */
const DOWNLOAD_PATH = /^(?:\/v2)?\/files\/\{id\}$/

/** HEAD beside each GET (not SCIM's: RFC 7644 has none), OPTIONS on every path. */
function addHeadAndOptions(path: string, item: Record<string, Json>): void {
  const get = item.get as (Json & { responses: Record<string, Json> }) | undefined
  if (get !== undefined && !path.startsWith('/scim/v2')) item.head ??= headOf(get)
  const tags = (get ?? Object.values(item)[0])?.tags
  if (item.options !== undefined) return
  const options = optionsOf(path, item as never, tags)
  // Refused before routing like any request: a foreign Host while /users is open, a fault.
  if (path.startsWith('/scim/v2')) documentScimErrors(options.responses as Responses)
  else documentSharedErrors(options.responses as Responses, OPTIONS_ERRORS)
  item.options = options
}

const OPTIONS_ERRORS: readonly ErrorCode[] = [
  'MISDIRECTED_REQUEST',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
]

/** A route's TypeBox schema as the document spells it. */
function cleanSchema(schema: unknown): Json {
  const copy = JSON.parse(JSON.stringify(schema)) as Json
  stripErrorOption(copy)
  return copy
}

type Responses = Record<string, { description: string }>

function documentSharedErrors(responses: Responses, codes: readonly ErrorCode[]): void {
  for (const code of codes) {
    const status = String(ERROR_CODES[code].status)
    const existing = responses[status]
    if (existing === undefined) {
      responses[status] = {
        description: code,
        content: { 'application/json': { schema: errorEnvelope } },
      } as Responses[string]
    } else if (!existing.description.includes(code)) {
      existing.description = `${existing.description}, ${code}`
    }
  }
}

/** SCIM's error form (RFC 7644 section 3.12), which every answer under /scim/v2 has. */
const SCIM_ERROR_SCHEMA: Json = {
  type: 'object',
  required: ['schemas', 'status', 'detail'],
  properties: {
    schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:Error' } },
    status: { type: 'string', pattern: '^[45][0-9][0-9]$' },
    scimType: { type: 'string' },
    detail: { type: 'string' },
  },
}

/**
 * The errors a SCIM operation can give: its resource names match in any case, so each answers
 * what any other could (a body read, a name taken, a stale If-Match, a missing user).
 */
const SCIM_ERRORS: readonly ErrorCode[] = [
  'BAD_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'PRECONDITION_FAILED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'MISDIRECTED_REQUEST',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
]

function documentScimErrors(responses: Responses): void {
  for (const code of SCIM_ERRORS) {
    const status = String(ERROR_CODES[code].status)
    const existing = responses[status]
    if (existing?.description.includes(code)) continue
    responses[status] = {
      description: existing === undefined ? code : `${existing.description}, ${code}`,
      content: { 'application/scim+json': { schema: SCIM_ERROR_SCHEMA } },
    } as Responses[string]
  }
}

/** Routes read their path parameters themselves (to answer 404, not 422): declare them. */
function declarePathParameters(operation: Json, path: string): void {
  operation.parameters ??= []
  const parameters = operation.parameters as { name: string; in: string }[]
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    if (parameters.some((parameter) => parameter.in === 'path' && parameter.name === name)) continue
    parameters.unshift({
      name: name as string,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    } as never)
  }
  if (parameters.length === 0) delete operation.parameters
}

/** `get /v2/users/{id}` → `getV2UsersById`. */
function operationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((part) => part !== '')
    .map((part) => {
      const parameter = /^\{(.+)\}$/.exec(part)?.[1]
      const word = parameter === undefined ? part : `by-${parameter}`
      return word
        .split(/[-_]/)
        .map((piece) => piece.charAt(0).toUpperCase() + piece.slice(1))
        .join('')
    })
  return method + words.join('')
}

/**
 * Removes `error` (Elysia's custom-message option, kept in roster's TypeBox schemas for its
 * validation messages) from every schema. Keys of a `properties` map are property names, so
 * a property called `error` stays.
 */
function stripErrorOption(node: unknown, isPropertyMap = false): void {
  if (node === null || typeof node !== 'object') return
  if (Array.isArray(node)) {
    for (const item of node) stripErrorOption(item)
    return
  }
  const record = node as Record<string, unknown>
  if (!isPropertyMap && typeof record.error === 'string') delete record.error
  for (const [key, value] of Object.entries(record)) {
    stripErrorOption(value, key === 'properties' && !isPropertyMap)
  }
}
