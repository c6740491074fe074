import type { TSchema } from '@sinclair/typebox'
import { ErrorEnvelope, OffsetPagination } from '../../http/openapi-schemas'
import { AuditEventView, AuditPage } from '../audit/schema'
import { ApiKeyPage, ApiKeyView, CreateApiKeyBody, CreatedApiKey } from '../auth/schema'
import { LoginAnswer, MfaRequiredAnswer } from '../auth/sign-in-schema'
import { FactorStatus, Passkey, PasskeyList, RecoveryCodes, TotpEnrolment } from '../factors/schema'
import {
  CreateGroupBody,
  GroupPage,
  GroupView,
  PatchGroupBody,
  ReplaceGroupBody,
} from '../groups/schema'
import { MailPage, MailView } from '../mail/schema'
import { FileView, UploadPage, UploadView } from '../uploads/schema'
import {
  CreateUserBody,
  PatchUserBody,
  ReplaceUserBody,
  UserPage,
  UserPageV2,
  UserView,
} from '../users/schema'
import {
  CreateEndpointBody,
  DeliveryPage,
  DeliveryView,
  EndpointPage,
  EndpointView,
  EndpointWithSecret,
  PatchEndpointBody,
} from '../webhook-endpoints/schema'
import { EventPage, EventView } from '../webhooks/schema'

/**
 * The schemas the OpenAPI document names in `components/schemas`, so that generated clients
 * have types to import (`components['schemas']['User']`) and the document says each shape once.
 * Wherever the document holds one of these shapes, publish() puts a `$ref` to it instead.
 */
export const NAMED_SCHEMAS: Record<string, TSchema> = {
  Error: ErrorEnvelope,
  Pagination: OffsetPagination,
  User: UserView,
  UserPage,
  UserCursorPage: UserPageV2,
  UserCreate: CreateUserBody,
  UserReplace: ReplaceUserBody,
  UserPatch: PatchUserBody,
  Group: GroupView,
  GroupPage,
  GroupCreate: CreateGroupBody,
  GroupReplace: ReplaceGroupBody,
  GroupPatch: PatchGroupBody,
  Upload: UploadView,
  UploadedFile: FileView,
  UploadPage,
  ApiKey: ApiKeyView,
  ApiKeyPage,
  ApiKeyCreate: CreateApiKeyBody,
  ApiKeyCreated: CreatedApiKey,
  SignIn: LoginAnswer,
  SecondFactorRequired: MfaRequiredAnswer,
  Passkey,
  PasskeyList,
  SecondFactors: FactorStatus,
  TotpEnrolment,
  RecoveryCodes,
  AuditEvent: AuditEventView,
  AuditPage,
  MailMessage: MailView,
  MailPage,
  WebhookEvent: EventView,
  WebhookEventPage: EventPage,
  WebhookEndpoint: EndpointView,
  WebhookEndpointWithSecret: EndpointWithSecret,
  WebhookEndpointPage: EndpointPage,
  WebhookEndpointCreate: CreateEndpointBody,
  WebhookEndpointPatch: PatchEndpointBody,
  WebhookDelivery: DeliveryView,
  WebhookDeliveryPage: DeliveryPage,
}

type Json = Record<string, unknown>

/**
 * A shape's identity: its JSON with keys sorted and descriptions left out, a union of string
 * constants spelled as an enum. Elysia's generator rewrites request bodies so (a union of
 * literals becomes `enum`, losing its description); the named copy keeps both.
 */
function shapeKey(node: Json): string {
  return stableJson(normalized(node, false))
}

function normalized(node: unknown, isPropertyMap: boolean): unknown {
  if (node === null || typeof node !== 'object') return node
  if (Array.isArray(node)) return node.map((item) => normalized(item, false))
  const record = node as Json
  const out: Json = {}
  for (const [key, value] of Object.entries(record)) {
    if (!isPropertyMap && key === 'description') continue
    out[key] = normalized(value, !isPropertyMap && key === 'properties')
  }
  const options = out.anyOf as Json[] | undefined
  if (
    !isPropertyMap &&
    Array.isArray(options) &&
    options.every((o) => typeof o.const === 'string')
  ) {
    const { anyOf: _anyOf, ...rest } = out
    return { ...rest, type: 'string', enum: options.map((o) => o.const) }
  }
  return out
}

function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`
  const record = value as Json
  const keys = Object.keys(record).sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${stableJson(record[key])}`).join(',')}}`
}

/**
 * Replaces, inside `node`, every object shaped like a named schema by a `$ref` to it (keeping a
 * description of its own beside the `$ref`, as OpenAPI 3.1 allows). Children first, so a page's
 * items become `$ref: User` before the page itself is compared.
 */
function refer(node: unknown, names: Map<string, string>, isPropertyMap = false): unknown {
  if (node === null || typeof node !== 'object') return node
  if (Array.isArray(node)) return node.map((item) => refer(item, names))
  const record = node as Json
  const out: Json = {}
  for (const [key, value] of Object.entries(record)) {
    out[key] = refer(value, names, key === 'properties' && !isPropertyMap)
  }
  if (isPropertyMap) return out
  const name = names.get(shapeKey(out))
  if (name === undefined) return out
  const ref: Json = { $ref: `#/components/schemas/${name}` }
  if (typeof record.description === 'string') ref.description = record.description
  return ref
}

/**
 * Names the schemas: each NAMED_SCHEMAS entry (as the document spells it, `clean` applied)
 * goes into components/schemas, its inner named shapes referred to, and every copy of it in
 * `paths` becomes a `$ref`. Smaller shapes are keyed first: a page holds its item.
 */
export function nameSchemas(
  document: Json,
  clean: (schema: unknown) => Json,
  named: Record<string, TSchema> = NAMED_SCHEMAS,
): void {
  // Each schema's size measured once, not once per comparison.
  const entries = Object.entries(named)
    .map(([name, schema]) => {
      const cleaned = clean(schema)
      return { name, schema: cleaned, size: JSON.stringify(cleaned).length }
    })
    .sort((a, b) => a.size - b.size)
    .map(({ name, schema }) => [name, schema] as const)
  const names = new Map<string, string>()
  const components = ((document.components as Json).schemas ?? {}) as Json
  for (const [name, schema] of entries) {
    const inner = Object.fromEntries(
      Object.entries(schema).map(([key, value]) => [
        key,
        refer(value, names, key === 'properties'),
      ]),
    )
    const key = shapeKey(inner)
    if (names.has(key)) throw new Error(`${name} has the same shape as ${names.get(key)}`)
    names.set(key, name)
    components[name] = inner
  }
  ;(document.components as Json).schemas = components
  document.paths = refer(document.paths, names)
  nameBodies(document.paths as Record<string, Record<string, Json>>)
}

/**
 * Request bodies, named by the operation that takes them: Elysia's generator rewrites a body's
 * schema (a nullable union becomes a type list, a union of literals an enum), so its copy is
 * not found by shape; it means the same as the named one, which is the schema the route checks.
 */
const BODY_NAMES: Record<string, string> = {
  'post /users': 'UserCreate',
  'put /users/{id}': 'UserReplace',
  'patch /users/{id}': 'UserPatch',
  'post /groups': 'GroupCreate',
  'put /groups/{id}': 'GroupReplace',
  'patch /groups/{id}': 'GroupPatch',
  'post /api-keys': 'ApiKeyCreate',
  'post /webhook-endpoints': 'WebhookEndpointCreate',
  'patch /webhook-endpoints/{id}': 'WebhookEndpointPatch',
}

function nameBodies(paths: Record<string, Record<string, Json>>): void {
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const name = BODY_NAMES[`${method} ${path.replace(/^\/v2(?=\/)/, '')}`]
      const content = (operation.requestBody as Json | undefined)?.content as
        | Record<string, Json>
        | undefined
      if (name === undefined || content === undefined) continue
      for (const [type, media] of Object.entries(content)) {
        if (type.includes('json')) media.schema = { $ref: `#/components/schemas/${name}` }
      }
    }
  }
}
