import { type DocumentDecoration, Elysia, t } from 'elysia'
import type { Config } from '../../config'
import { parseRowId } from '../../db/row-id'
import { AppError, ScimError, scimBadRequest } from '../../errors/errors'
import { SCIM_JSON } from '../../http/error-handler'
import { jsonBody } from '../../http/json-body'
import { jsonResponse } from '../../http/json-response'
import { publicBaseUrl } from '../../http/request-context'
import { ownValue, reachesPrototype } from '../../own-keys'
import { MAX_RESULTS, resourceTypes, schemas, serviceProviderConfig } from '../../scim/discovery'
import { type Condition, parseGroupFilter, parseUserFilter } from '../../scim/filter'
import { readScimGroup, type ScimGroups, toScimGroup } from '../../scim/groups'
import {
  attributeKey,
  attributeValue,
  ENTERPRISE_SCHEMA,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  USER_SCHEMA,
} from '../../scim/names'
import type {
  GroupSortKey,
  ScimGroupRow,
  ScimUserQuery,
  ScimUserRow,
  SortKey,
} from '../../scim/profile'
import { type Projection, project, readProjection } from '../../scim/projection'
import type { ScimUsers } from '../../scim/service'
import { readScimUser, toScimUser } from '../../scim/users'
import { etagOf } from '../../users/records'
import type { AuthPlugin } from '../auth/plugin'
import { auditSourceOf } from '../auth/principal'
import { guardOf, type Operation } from '../authorisation'
import { versionsFromIfMatch } from '../users/etag'

const tags = ['scim']
/** A list's page size when `count` is not given. */
const DEFAULT_COUNT = 100

export interface ScimRouteInputs {
  auth: AuthPlugin
  scimUsers: ScimUsers
  scimGroups: ScimGroups
  config: Pick<Config, 'publicUrl' | 'usersAccess'>
}

/** What a handler is given: the request, its body (when it has one) and Elysia's `set`. */
interface Call {
  request: Request
  body: unknown
  set: { headers: Record<string, unknown>; status?: number | string }
  /** The path after `/scim/v2/`, split, each part decoded; resource names lower-cased. */
  parts: string[]
  base: string
}

/** The canonical operations: documented, and reached by any case of their names. */
const OPERATIONS: { method: string; path: string; summary: string }[] = [
  { method: 'GET', path: '/ServiceProviderConfig', summary: 'What roster offers of SCIM' },
  { method: 'GET', path: '/ResourceTypes', summary: 'The resource types: User, Group' },
  { method: 'GET', path: '/ResourceTypes/:id', summary: 'One resource type' },
  { method: 'GET', path: '/Schemas', summary: 'Every attribute roster stores' },
  { method: 'GET', path: '/Schemas/:id', summary: 'One schema, by its URN' },
  { method: 'GET', path: '/Users', summary: 'List users (filter, sortBy, startIndex, count)' },
  { method: 'POST', path: '/Users', summary: 'Create a user' },
  { method: 'POST', path: '/Users/.search', summary: 'List users, the query in the body' },
  { method: 'GET', path: '/Users/:id', summary: 'One user' },
  { method: 'PUT', path: '/Users/:id', summary: 'Replace a user' },
  { method: 'PATCH', path: '/Users/:id', summary: 'Change a user with a PatchOp' },
  { method: 'DELETE', path: '/Users/:id', summary: 'Delete a user (204)' },
  { method: 'GET', path: '/Groups', summary: 'List groups (filter, sortBy, startIndex, count)' },
  { method: 'POST', path: '/Groups', summary: 'Create a group' },
  { method: 'POST', path: '/Groups/.search', summary: 'List groups, the query in the body' },
  { method: 'GET', path: '/Groups/:id', summary: 'One group' },
  { method: 'PUT', path: '/Groups/:id', summary: 'Replace a group and its members' },
  { method: 'PATCH', path: '/Groups/:id', summary: 'Change a group or its members with a PatchOp' },
  { method: 'DELETE', path: '/Groups/:id', summary: 'Delete a group (204)' },
]

/**
 * SCIM 2.0 (CONTRACT section 13) under /scim/v2, for a key with the `scim` scope. Every
 * operation is registered by its canonical name (for the API document) and, through one
 * catch-all, by any case of it (`/scim/v2/users`); both run `dispatch`. Every error is in
 * SCIM's form (http/error-handler.ts sees the path).
 */
export function scimRoutes(inputs: ScimRouteInputs) {
  const { auth, config } = inputs
  const guard = guardOf('ALL /scim/v2/*', config.usersAccess)
  const handler = (call: Omit<Call, 'parts' | 'base'>) =>
    dispatch(inputs, {
      ...call,
      parts: partsOf(call.request.url),
      base: `${publicBaseUrl(call.request, config.publicUrl)}/scim/v2`,
    })
  const hook = {
    ...guard.hook,
    parse: jsonBody(['application/scim+json', 'application/json'], { optional: true }),
  }
  let app = new Elysia({ name: 'scim' }).use(auth)
  for (const { method, path, summary } of OPERATIONS) {
    const operation = `${method} /scim/v2${path}` as Operation
    const routeGuard = guardOf(operation, config.usersAccess)
    app = app.route(method, `/scim/v2${path}`, handler, {
      ...hook,
      ...(method === 'POST' || method === 'PUT' || method === 'PATCH'
        ? { body: t.Record(t.String(), t.Unknown()) }
        : {}),
      detail: {
        tags,
        summary,
        description: descriptionOf(method, path),
        security: routeGuard.security,
        responses: successOf(method, path),
      },
    }) as unknown as typeof app
  }
  return app.all('/scim/v2/*', handler, { ...hook, detail: { hide: true } })
}

/** What the API document says of each operation beyond its summary. */
function descriptionOf(method: string, path: string): string {
  if (!path.startsWith('/Users') && !path.startsWith('/Groups')) {
    return 'RFC 7643 section 5 to 7; the same for any case of the name.'
  }
  const resource = path.startsWith('/Users') ? 'User' : 'Group'
  if (path.endsWith('.search') || (method === 'GET' && !path.includes(':id'))) {
    return `A ListResponse. filter (RFC 7644 section 3.4.2.2, compiled to SQL), startIndex (1-based), count (at most ${MAX_RESULTS}), sortBy, sortOrder, attributes, excludedAttributes.`
  }
  const answers: Record<string, string> = {
    GET: `The ${resource} with an ETag (meta.version); attributes and excludedAttributes apply.`,
    POST: `Answers 201 with Location and ETag. A taken name is 409 scimType uniqueness.`,
    PUT: `Replaces the ${resource}; If-Match with a stale meta.version is 412.`,
    PATCH: `A PatchOp (add, remove, replace; with or without path; value paths). If-Match with a stale meta.version is 412.`,
    DELETE: 'Answers 204; a second DELETE is 404.',
  }
  return answers[method] ?? ''
}

/** What an operation answers when it succeeds: a SCIM resource or list, or nothing (204). */
function successOf(method: string, path: string): DocumentDecoration['responses'] {
  if (method === 'DELETE') return { 204: { description: 'Deleted' } }
  const content = { 'application/scim+json': { schema: { type: 'object' as const } } }
  const created = method === 'POST' && (path === '/Users' || path === '/Groups')
  return created
    ? { 201: { description: 'Created, with Location and ETag', content } }
    : { 200: { description: 'The resource or the ListResponse', content } }
}

function partsOf(url: string): string[] {
  const path = new URL(url).pathname.replace(/^\/scim\/v2\/?/i, '')
  return path
    .split('/')
    .filter((part) => part !== '')
    .map((part, index) => (index === 0 ? part.toLowerCase() : decodeURIComponent(part)))
}

async function dispatch(inputs: ScimRouteInputs, call: Call): Promise<Response> {
  const method = call.request.method.toUpperCase()
  const [resource, id, extra] = call.parts
  if (extra !== undefined) throw noSuchPath()
  const only = (allowed: string) => {
    if (method !== allowed) {
      throw new ScimError(
        'METHOD_NOT_ALLOWED',
        null,
        `${method} is not allowed here; use ${allowed}`,
      )
    }
  }
  switch (resource) {
    case 'serviceproviderconfig':
      only('GET')
      if (id !== undefined) throw noSuchPath()
      return scimJson(serviceProviderConfig(call.base))
    case 'resourcetypes':
      only('GET')
      return discovery(resourceTypes(call.base), id, 'resource type')
    case 'schemas':
      only('GET')
      return discovery(schemas(call.base), id, 'schema')
    case 'users':
      return await users(inputs, call, method, id)
    case 'groups':
      return await groups(inputs, call, method, id)
    case 'me':
    case 'bulk':
      throw new ScimError(
        'NOT_FOUND',
        null,
        `roster does not offer /${resource} (see ServiceProviderConfig)`,
      )
    default:
      throw noSuchPath()
  }
}

const noSuchPath = () => new ScimError('NOT_FOUND', null, 'No SCIM resource at this path')

function discovery(all: { id: string }[], id: string | undefined, what: string): Response {
  if (id === undefined) return scimJson(listResponse(all, all.length, 1))
  const found = all.find((item) => item.id.toLowerCase() === id.toLowerCase())
  if (found === undefined) throw new ScimError('NOT_FOUND', null, `No ${what} with this id`)
  return scimJson(found)
}

async function users(
  inputs: ScimRouteInputs,
  call: Call,
  method: string,
  idText: string | undefined,
): Promise<Response> {
  const { scimUsers } = inputs
  const by = auditSourceOf(call.set)
  if (idText === undefined) {
    if (method === 'GET') return await listUsers(scimUsers, call, queryOf(call.request))
    if (method !== 'POST') throw notAllowed(method, 'GET, POST')
    const body = resourceBody(call.body, USER_SCHEMA)
    const created = await scimUsers.create(readScimUser(body), by)
    return userAnswer(created, call, 201)
  }
  if (idText === '.search') {
    if (method !== 'POST') throw notAllowed(method, 'POST')
    return await listUsers(scimUsers, call, searchOf(call.body))
  }
  const id = parseRowId(idText)
  const versions = versionsOf(call.request.headers.get('if-match'), id)
  if (id === null) throw noUser()
  switch (method) {
    case 'GET': {
      const found = await scimUsers.get(id)
      if (found === null) throw noUser()
      const projection = readProjection(
        queryOf(call.request).get('attributes'),
        queryOf(call.request).get('excludedAttributes'),
      )
      return userAnswer(found, call, 200, projection)
    }
    case 'PUT': {
      const input = readScimUser(resourceBody(call.body, USER_SCHEMA))
      return userAnswer(await scimUsers.replace(id, input, versions, by), call, 200)
    }
    case 'PATCH': {
      const patched = await scimUsers.patch(id, objectBody(call.body), versions, call.base, by)
      if (patched === null) throw noUser()
      return userAnswer(patched, call, 200)
    }
    case 'DELETE':
      await scimUsers.remove(id, versions, by)
      return new Response(null, { status: 204 })
    default:
      throw notAllowed(method, 'GET, PUT, PATCH, DELETE')
  }
}

const noUser = () => new ScimError('NOT_FOUND', null, 'No user with this id')
const noGroup = () => new ScimError('NOT_FOUND', null, 'No group with this id')

async function groups(
  inputs: ScimRouteInputs,
  call: Call,
  method: string,
  idText: string | undefined,
): Promise<Response> {
  const { scimGroups } = inputs
  const by = auditSourceOf(call.set)
  if (idText === undefined) {
    if (method === 'GET') return await listGroups(scimGroups, call, queryOf(call.request))
    if (method !== 'POST') throw notAllowed(method, 'GET, POST')
    const input = readScimGroup(resourceBody(call.body, GROUP_SCHEMA))
    return await groupAnswer(scimGroups, await scimGroups.create(input, by), call, 201)
  }
  if (idText === '.search') {
    if (method !== 'POST') throw notAllowed(method, 'POST')
    return await listGroups(scimGroups, call, searchOf(call.body))
  }
  const id = parseRowId(idText)
  const versions = versionsOf(call.request.headers.get('if-match'), id)
  if (id === null) throw noGroup()
  switch (method) {
    case 'GET': {
      const found = await scimGroups.get(id)
      if (found === null) throw noGroup()
      const query = queryOf(call.request)
      const projection = readProjection(query.get('attributes'), query.get('excludedAttributes'))
      return await groupAnswer(scimGroups, found, call, 200, projection)
    }
    case 'PUT': {
      const input = readScimGroup(resourceBody(call.body, GROUP_SCHEMA))
      return await groupAnswer(
        scimGroups,
        await scimGroups.replace(id, input, versions, by),
        call,
        200,
      )
    }
    case 'PATCH': {
      const patched = await scimGroups.patch(id, objectBody(call.body), versions, call.base, by)
      if (patched === null) throw noGroup()
      return await groupAnswer(scimGroups, patched, call, 200)
    }
    case 'DELETE':
      await scimGroups.remove(id, versions, by)
      return new Response(null, { status: 204 })
    default:
      throw notAllowed(method, 'GET, PUT, PATCH, DELETE')
  }
}

const GROUP_SORT_KEYS: Record<string, GroupSortKey> = {
  id: 'group_id',
  displayname: 'group_name',
  externalid: 'group_external_id',
  'meta.created': 'group_created_at',
  'meta.lastmodified': 'group_updated_at',
}

async function listGroups(
  scimGroups: ScimGroups,
  call: Call,
  parameters: ListParameters,
): Promise<Response> {
  const filter = parameters.get('filter')
  const where: Condition = filter === null ? { kind: 'all' } : parseGroupFilter(filter)
  const page = pageOf(parameters)
  const projection = readProjection(
    parameters.get('attributes'),
    parameters.get('excludedAttributes'),
  )
  const withMembers = wantsMembers(projection)
  const sortBy = parameters.get('sortBy')
  const sortKey =
    sortBy === null || sortBy.trim() === ''
      ? 'group_id'
      : ownValue(GROUP_SORT_KEYS, sortKeyName(sortBy))
  if (sortKey === undefined) {
    throw scimBadRequest('invalidValue', `roster cannot sort groups by ${JSON.stringify(sortBy)}`)
  }
  const { total, rows } = await scimGroups.list({
    where,
    sortBy: sortKey,
    descending: descendingOf(parameters.get('sortOrder')),
    offset: page.startIndex - 1,
    count: page.count,
    withMembers,
  })
  const names = withMembers
    ? await scimGroups.namesOf(rows.map((row) => row.group))
    : new Map<number, string>()
  const resources = rows.map((row) =>
    project(toScimGroup(row, names, call.base, withMembers), projection, []),
  )
  return scimJson(listResponse(resources, total, page.startIndex))
}

/** Whether an answer shows members: left out by `excludedAttributes=members` (Entra asks so). */
function wantsMembers(projection: Projection): boolean {
  if (projection.excluded.includes('members')) return false
  return (
    projection.attributes === null ||
    projection.attributes.some((name) => name === 'members' || name.startsWith('members.'))
  )
}

async function groupAnswer(
  scimGroups: ScimGroups,
  row: ScimGroupRow,
  call: Call,
  status: number,
  projection: Projection = { attributes: null, excluded: [] },
): Promise<Response> {
  const { group } = row
  const withMembers = wantsMembers(projection)
  const names = withMembers ? await scimGroups.namesOf([group]) : new Map<number, string>()
  const resource = project(toScimGroup(row, names, call.base, withMembers), projection, [])
  const headers: Record<string, string> = { etag: etagOf(group) }
  if (status === 201) headers.location = `${call.base}/Groups/${group.id}`
  return scimJson(resource, status, headers)
}

const notAllowed = (method: string, allowed: string) =>
  new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${allowed}`, [], {
    allow: allowed,
  })

/** A list's parameters, from the query string or a `.search` body. */
interface ListParameters {
  get(name: string): string | null
}

const queryOf = (request: Request): ListParameters => {
  const params = new URL(request.url).searchParams
  // Parameter names match without regard to case, as attribute names do.
  return {
    get(name) {
      const folded = name.toLowerCase()
      for (const [key, value] of params) if (key.toLowerCase() === folded) return value
      return null
    },
  }
}

function searchOf(body: unknown): ListParameters {
  const object = objectBody(body)
  return {
    get(name) {
      const value = attributeValue(object, name)
      if (value === undefined || value === null) return null
      if (Array.isArray(value)) return value.map(String).join(',')
      if (typeof value === 'object') throw scimBadRequest('invalidValue', `${name} must be a value`)
      return String(value)
    },
  }
}

async function listUsers(
  scimUsers: ScimUsers,
  call: Call,
  parameters: ListParameters,
): Promise<Response> {
  const filter = parameters.get('filter')
  const where: Condition = filter === null ? { kind: 'all' } : parseUserFilter(filter)
  const { startIndex, count } = pageOf(parameters)
  const projection = readProjection(
    parameters.get('attributes'),
    parameters.get('excludedAttributes'),
  )
  const query: ScimUserQuery = {
    where,
    sortBy: sortKeyOf(parameters.get('sortBy')),
    descending: descendingOf(parameters.get('sortOrder')),
    offset: startIndex - 1,
    count,
  }
  const { total, rows } = await scimUsers.list(query)
  const resources = rows.map((row) =>
    project(toScimUser(row, call.base), projection, [ENTERPRISE_SCHEMA]),
  )
  return scimJson(listResponse(resources, total, startIndex))
}

/**
 * `startIndex` (1-based) and `count` (default 100), each taken to its nearest bound as RFC 7644
 * section 3.4.2.4 says: a startIndex below 1 is 1, a count below 0 is 0 and one above
 * MAX_RESULTS is MAX_RESULTS. A startIndex past any table (however many digits) reads past the
 * end: an empty page.
 */
function pageOf(parameters: ListParameters): { startIndex: number; count: number } {
  const asked = integerOf(parameters.get('startIndex'), 'startIndex') ?? 1
  const startIndex = Math.min(MAX_START_INDEX, Math.max(1, asked))
  const count = Math.min(
    MAX_RESULTS,
    Math.max(0, integerOf(parameters.get('count'), 'count') ?? DEFAULT_COUNT),
  )
  return { startIndex, count }
}

/** Past any table either database keeps, and an offset both take. */
const MAX_START_INDEX = 2 ** 31 - 1

function listResponse(resources: unknown[], total: number, startIndex: number) {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    itemsPerPage: resources.length,
    startIndex,
    Resources: resources,
  }
}

/** An integer of any size (a huge one is clamped by the caller); anything else is 400. */
function integerOf(text: string | null, name: string): number | null {
  if (text === null) return null
  if (!/^[+-]?[0-9]+$/.test(text.trim())) {
    throw scimBadRequest('invalidValue', `${name} must be an integer`)
  }
  return Number(text)
}

const SORT_KEYS: Record<string, SortKey> = {
  id: 'id',
  username: 'username',
  displayname: 'name',
  emails: 'email',
  'emails.value': 'email',
  externalid: 'external_id',
  'name.givenname': 'given_name',
  'name.familyname': 'family_name',
  'name.formatted': 'formatted_name',
  active: 'active',
  'meta.created': 'created_at',
  'meta.lastmodified': 'updated_at',
  employeenumber: 'employee_number',
  department: 'department',
  manager: 'manager_id',
  'manager.value': 'manager_id',
}

/**
 * A sortBy's attribute as the sort tables name it; 400 invalidPath for one leading into a
 * prototype (section 17). Looked up as an own key only: the tables are plain objects.
 */
function sortKeyName(text: string): string {
  if (reachesPrototype(text)) {
    throw scimBadRequest('invalidPath', `sortBy ${JSON.stringify(text)} names no attribute`)
  }
  return attributeKey(text.trim())
}

function sortKeyOf(text: string | null): SortKey {
  if (text === null || text.trim() === '') return 'id'
  const key = ownValue(SORT_KEYS, sortKeyName(text))
  if (key === undefined) {
    throw scimBadRequest('invalidValue', `roster cannot sort by ${JSON.stringify(text)}`)
  }
  return key
}

function descendingOf(text: string | null): boolean {
  if (text === null || text === '') return false
  const folded = text.toLowerCase()
  if (folded !== 'ascending' && folded !== 'descending') {
    throw scimBadRequest('invalidValue', 'sortOrder must be ascending or descending')
  }
  return folded === 'descending'
}

/** The versions an If-Match accepts (`meta.version`, weak or strong); null: any. */
/**
 * The versions an If-Match header accepts, as for /users (versionsFromIfMatch), weak tags
 * included: SCIM clients send `W/` with meta.version (RFC 7644 section 3.14).
 */
function versionsOf(header: string | null, id: number | null): number[] | null {
  const strong = header === null ? null : header.replace(/(^|,)\s*W\//g, '$1')
  return versionsFromIfMatch(strong, String(id ?? 0))
}

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw scimBadRequest('invalidSyntax', 'The body must be a JSON object')
  }
  return body as Record<string, unknown>
}

/** A resource's body: an object whose `schemas` names the resource's schema. */
function resourceBody(body: unknown, schema: string): Record<string, unknown> {
  const object = objectBody(body)
  const schemasSent = attributeValue(object, 'schemas')
  const named =
    Array.isArray(schemasSent) &&
    schemasSent.some(
      (sent) => typeof sent === 'string' && sent.toLowerCase() === schema.toLowerCase(),
    )
  if (!named) throw scimBadRequest('invalidSyntax', `The body's schemas must hold ${schema}`)
  return object
}

function userAnswer(
  row: ScimUserRow,
  call: Call,
  status: number,
  projection: Projection = { attributes: null, excluded: [] },
): Response {
  const resource = project(toScimUser(row, call.base), projection, [ENTERPRISE_SCHEMA])
  const headers: Record<string, string> = { etag: etagOf(row.user) }
  if (status === 201) headers.location = `${call.base}/Users/${row.user.id}`
  return scimJson(resource, status, headers)
}

function scimJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return jsonResponse(body, status, { 'content-type': SCIM_JSON, ...headers })
}
