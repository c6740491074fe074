import { type Filter, parse } from 'scim2-parse-filter'
import { scimBadRequest } from '../errors/errors'
import { ownValue, reachesPrototype } from '../own-keys'
import { attributeKey, ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from './names'

/**
 * SCIM filters (RFC 7644 section 3.4.2.2), parsed by scim2-parse-filter into its tree and turned
 * here into a Condition over what roster stores: each attribute resolved once, each value
 * checked against its attribute's type. The backends compile a Condition to SQL
 * (backends/<database>/scim.ts), so a filter is never run in memory over a table.
 */

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le'
export type ValueType = 'string' | 'boolean' | 'date' | 'id'

/** A column of a user (with its profile) a filter may name. */
export type UserColumn =
  | 'id'
  | 'username'
  | 'name'
  | 'external_id'
  | 'given_name'
  | 'family_name'
  | 'formatted_name'
  | 'active'
  | 'created_at'
  | 'updated_at'
  | 'employee_number'
  | 'department'
  | 'manager_id'

/** A column of a group a filter may name. */
export type GroupColumn =
  | 'group_id'
  | 'group_name'
  | 'group_external_id'
  | 'group_created_at'
  | 'group_updated_at'

/** A field of one email: the primary (the record's email) or one of the others. */
export type EmailField = 'value' | 'type' | 'primary' | 'display'

export type Attribute =
  | { scope: 'user'; column: UserColumn; type: ValueType; caseExact: boolean }
  | { scope: 'group'; column: GroupColumn; type: ValueType; caseExact: boolean }
  | { scope: 'email'; field: EmailField; type: ValueType; caseExact: boolean }
  /** A member of a group: its user id (`members.value`). */
  | { scope: 'member'; field: 'value'; type: ValueType; caseExact: boolean }

export type Condition =
  | { kind: 'all' }
  | { kind: 'none' }
  | { kind: 'and' | 'or'; parts: Condition[] }
  | { kind: 'not'; part: Condition }
  | { kind: 'compare'; attribute: Attribute; op: CompareOp; value: string | number | boolean }
  | { kind: 'present'; attribute: Attribute }
  /** Some email of the user (the primary or another) meets `where` (over email fields). */
  | { kind: 'anyEmail'; where: Condition }
  /** Some member of the group meets `where` (over member fields). */
  | { kind: 'anyMember'; where: Condition }

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL_CHARACTER = /[\x00-\x1f\x7f]/

/** Longer filters are refused: no identity provider sends one near this long. */
export const MAX_FILTER_LENGTH = 2048
/** At most this many comparisons and operators in one filter. */
const MAX_NODES = 100

const user = (column: UserColumn, type: ValueType = 'string', caseExact = false): Attribute => ({
  scope: 'user',
  column,
  type,
  caseExact,
})
const email = (field: EmailField, type: ValueType = 'string'): Attribute => ({
  scope: 'email',
  field,
  type,
  caseExact: false,
})

/** The user attributes, by their name lower-cased, without a schema's URN. */
const USER_ATTRIBUTES: Record<string, Attribute> = {
  id: user('id', 'id', true),
  username: user('username'),
  displayname: user('name'),
  'name.formatted': user('formatted_name'),
  'name.givenname': user('given_name'),
  'name.familyname': user('family_name'),
  externalid: user('external_id', 'string', true),
  active: user('active', 'boolean'),
  'meta.created': user('created_at', 'date'),
  'meta.lastmodified': user('updated_at', 'date'),
  employeenumber: user('employee_number', 'string', true),
  department: user('department'),
  manager: user('manager_id', 'string', true),
  'manager.value': user('manager_id', 'string', true),
}

const group = (column: GroupColumn, type: ValueType = 'string', caseExact = false): Attribute => ({
  scope: 'group',
  column,
  type,
  caseExact,
})

/** The group attributes, by their name lower-cased. */
const GROUP_ATTRIBUTES: Record<string, Attribute> = {
  id: group('group_id', 'id'),
  displayname: group('group_name'),
  externalid: group('group_external_id', 'string', true),
  'meta.created': group('group_created_at', 'date'),
  'meta.lastmodified': group('group_updated_at', 'date'),
}

const MEMBER_FIELDS: Record<string, Attribute> = {
  value: { scope: 'member', field: 'value', type: 'id', caseExact: true },
}

/**
 * Attributes RFC 7643's User and Group schemas define that roster does not store: a filter
 * over one is answered as over an attribute without a value (`title pr` matches nobody,
 * `userType ne "x"` everybody), not refused. A name no schema defines is 400 invalidFilter.
 */
const USER_ABSENT = new Set([
  'nickname',
  'profileurl',
  'title',
  'usertype',
  'preferredlanguage',
  'locale',
  'timezone',
  'phonenumbers',
  'ims',
  'photos',
  'addresses',
  'entitlements',
  'roles',
  'x509certificates',
  'name.middlename',
  'name.honorificprefix',
  'name.honorificsuffix',
  'costcenter',
  'organization',
  'division',
  'manager.displayname',
  'meta.resourcetype',
  'meta.location',
  'meta.version',
])
const GROUP_ABSENT = new Set(['meta.resourcetype', 'meta.location', 'meta.version'])

/** The multi-valued attribute of each resource that a value path (`x[…]`) may name. */
interface Resource {
  attributes: Record<string, Attribute>
  /** Defined by the resource's schemas, not stored (see USER_ABSENT). */
  absent: ReadonlySet<string>
  /** What `schemas eq "<urn>"` matches, by the URN lower-cased. */
  schemas: Record<string, Condition>
  multi: { name: string; fields: Record<string, Attribute>; kind: 'anyEmail' | 'anyMember' }
}

const EMAIL_FIELDS: Record<string, Attribute> = {
  value: email('value'),
  type: email('type'),
  primary: email('primary', 'boolean'),
  display: email('display'),
}

/** A user has the enterprise schema when it has one of its attributes. */
const HAS_ENTERPRISE: Condition = {
  kind: 'or',
  parts: (['employeenumber', 'department', 'manager'] as const).map((name) => ({
    kind: 'present' as const,
    attribute: USER_ATTRIBUTES[name] as Attribute,
  })),
}

const USERS: Resource = {
  attributes: USER_ATTRIBUTES,
  absent: USER_ABSENT,
  schemas: {
    [USER_SCHEMA.toLowerCase()]: { kind: 'all' },
    [ENTERPRISE_SCHEMA.toLowerCase()]: HAS_ENTERPRISE,
  },
  multi: { name: 'emails', fields: EMAIL_FIELDS, kind: 'anyEmail' },
}
const GROUPS: Resource = {
  attributes: GROUP_ATTRIBUTES,
  absent: GROUP_ABSENT,
  schemas: { [GROUP_SCHEMA.toLowerCase()]: { kind: 'all' } },
  multi: { name: 'members', fields: MEMBER_FIELDS, kind: 'anyMember' },
}

/** Parses a Users filter; 400 invalidFilter when it cannot be parsed or names what roster lacks. */
export function parseUserFilter(filter: string): Condition {
  return toCondition(parseTree(filter), USERS, null)
}

/** Parses a Groups filter (displayName, id, meta dates, `members[value eq "…"]`). */
export function parseGroupFilter(filter: string): Condition {
  return toCondition(parseTree(filter), GROUPS, null)
}

/** The filter's tree as scim2-parse-filter gives it; 400 invalidFilter when it is not one. */
export function parseTree(filter: string): Filter {
  if (filter.length > MAX_FILTER_LENGTH) {
    throw scimBadRequest('invalidFilter', `A filter may be at most ${MAX_FILTER_LENGTH} characters`)
  }
  let tree: Filter
  try {
    tree = parse(filter)
  } catch (error) {
    // A nesting deep enough to exhaust the stack is as unparseable as a syntax error.
    const reason =
      error instanceof RangeError ? 'it is nested too deeply' : (error as Error).message
    throw scimBadRequest('invalidFilter', `The filter cannot be parsed: ${reason}`)
  }
  if (countNodes(tree) > MAX_NODES) {
    throw scimBadRequest('invalidFilter', `A filter may hold at most ${MAX_NODES} expressions`)
  }
  const reaching = attributePaths(tree).find(reachesPrototype)
  if (reaching !== undefined) {
    throw scimBadRequest(
      'invalidFilter',
      `The filter names ${JSON.stringify(reaching)}, which no schema defines`,
    )
  }
  return tree
}

/** Every attribute path a filter names, value paths' inner ones included. */
export function attributePaths(tree: Filter): string[] {
  switch (tree.op) {
    case 'and':
    case 'or':
      return tree.filters.flatMap(attributePaths)
    case 'not':
      return attributePaths(tree.filter)
    case '[]':
      return [tree.attrPath, ...attributePaths(tree.valFilter)]
    default:
      return [tree.attrPath]
  }
}

function countNodes(tree: Filter): number {
  switch (tree.op) {
    case 'and':
    case 'or':
      return 1 + tree.filters.reduce((sum, part) => sum + countNodes(part), 0)
    case 'not':
      return 1 + countNodes(tree.filter)
    case '[]':
      return 1 + countNodes(tree.valFilter)
    default:
      return 1
  }
}

/**
 * The tree as a Condition over `resource`; `inside` is the multi-valued attribute's fields
 * while a value path's filter is read (`emails[type eq "work"]`), null at the top.
 */
function toCondition(
  tree: Filter,
  resource: Resource,
  inside: Record<string, Attribute> | null,
): Condition {
  switch (tree.op) {
    case 'and':
    case 'or':
      return {
        kind: tree.op,
        parts: tree.filters.map((part) => toCondition(part, resource, inside)),
      }
    case 'not':
      return { kind: 'not', part: toCondition(tree.filter, resource, inside) }
    case '[]': {
      // A value path over a multi-valued attribute roster does not keep matches nothing.
      if (inside === null && resource.absent.has(attributeKey(tree.attrPath))) return NOTHING
      if (inside !== null || attributeKey(tree.attrPath) !== resource.multi.name) {
        throw scimBadRequest('invalidFilter', `${tree.attrPath}[…] is not a multi-valued attribute`)
      }
      const where = toCondition(tree.valFilter, resource, resource.multi.fields)
      return { kind: resource.multi.kind, where }
    }
    case 'pr':
      if (inside === null && isSchemas(tree.attrPath)) return EVERYTHING
      if (inside === null && isAbsent(tree.attrPath, resource)) return NOTHING
      return onAttribute(tree.attrPath, resource, inside, (attribute) => ({
        kind: 'present',
        attribute,
      }))
    default: {
      const op = tree.op as CompareOp
      if (inside === null && isSchemas(tree.attrPath)) {
        return schemasComparison(resource, op, tree.compValue, tree.attrPath)
      }
      // An attribute without a value equals nothing and differs from everything.
      if (inside === null && isAbsent(tree.attrPath, resource)) {
        return op === 'ne' ? EVERYTHING : NOTHING
      }
      return onAttribute(tree.attrPath, resource, inside, (attribute) =>
        comparison(attribute, op, tree.compValue, tree.attrPath),
      )
    }
  }
}

const NOTHING: Condition = { kind: 'none' }
const EVERYTHING: Condition = { kind: 'all' }

const isSchemas = (path: string) => attributeKey(path) === 'schemas'

/** `title`, `name.middleName`, `ims.value`: defined by the schema, kept by roster nowhere. */
function isAbsent(path: string, resource: Resource): boolean {
  const key = attributeKey(path)
  return resource.absent.has(key) || resource.absent.has(key.split('.')[0] ?? '')
}

/** `schemas eq "…:enterprise:2.0:User"`: the users that have an enterprise attribute. */
function schemasComparison(resource: Resource, op: CompareOp, value: unknown, path: string) {
  if (typeof value !== 'string' || (op !== 'eq' && op !== 'ne')) {
    throw invalidComparison(path, op, value)
  }
  const matched = ownValue(resource.schemas, value.toLowerCase()) ?? NOTHING
  return op === 'eq' ? matched : ({ kind: 'not', part: matched } as Condition)
}

/** Resolves a path; `emails` and `emails.<field>` at the top mean "some email" (so members). */
function onAttribute(
  path: string,
  resource: Resource,
  inside: Record<string, Attribute> | null,
  make: (attribute: Attribute) => Condition,
): Condition {
  const key = attributeKey(path)
  const { multi } = resource
  if (inside === null && (key === multi.name || key.startsWith(`${multi.name}.`))) {
    const field = ownValue(
      multi.fields,
      key === multi.name ? 'value' : key.slice(multi.name.length + 1),
    )
    if (field === undefined) throw unknownAttribute(path)
    return { kind: multi.kind, where: make(field) }
  }
  const attribute = ownValue(inside ?? resource.attributes, key)
  if (attribute === undefined) throw unknownAttribute(path)
  return make(attribute)
}

const unknownAttribute = (path: string) =>
  scimBadRequest(
    'invalidFilter',
    `The filter names ${JSON.stringify(path)}, which roster does not store`,
  )

function comparison(attribute: Attribute, op: CompareOp, raw: unknown, path: string): Condition {
  // `eq null` asks for an attribute without a value; `ne null` for one with.
  if (raw === null) {
    if (op === 'eq') return { kind: 'not', part: { kind: 'present', attribute } }
    if (op === 'ne') return { kind: 'present', attribute }
    throw invalidComparison(path, op, raw)
  }
  switch (attribute.type) {
    case 'boolean': {
      const value = booleanOf(raw)
      if (value === null || (op !== 'eq' && op !== 'ne')) throw invalidComparison(path, op, raw)
      return { kind: 'compare', attribute, op, value }
    }
    case 'date': {
      const time = typeof raw === 'string' ? Date.parse(raw) : Number.NaN
      if (Number.isNaN(time) || op === 'co' || op === 'sw' || op === 'ew') {
        throw invalidComparison(path, op, raw)
      }
      return { kind: 'compare', attribute, op, value: new Date(time).toISOString() }
    }
    case 'id': {
      const text = String(raw)
      if (!/^[1-9][0-9]{0,15}$/.test(text) || !['eq', 'ne'].includes(op)) {
        if (op === 'eq') return { kind: 'none' }
        if (op === 'ne') return { kind: 'all' }
        throw invalidComparison(path, op, raw)
      }
      return { kind: 'compare', attribute, op, value: Number(text) }
    }
    default: {
      // A number or a boolean is never identical to a string (RFC 7644 §3.4.2.2: `eq` asks
      // for identical values), so it is refused as docs/scim.md says, not compared as text.
      if (typeof raw !== 'string') throw invalidComparison(path, op, raw)
      const value = raw
      // Nothing roster stores holds one, and PostgreSQL's text cannot hold U+0000 at all.
      if (CONTROL_CHARACTER.test(value)) {
        throw scimBadRequest(
          'invalidFilter',
          `${path}: a value must not contain control characters`,
        )
      }
      return { kind: 'compare', attribute, op, value }
    }
  }
}

/** true, false, and the strings identity providers send for them ("True", "false"). */
export function booleanOf(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value
  if (typeof value !== 'string') return null
  const folded = value.toLowerCase()
  return folded === 'true' ? true : folded === 'false' ? false : null
}

const invalidComparison = (path: string, op: string, value: unknown) =>
  scimBadRequest(
    'invalidFilter',
    `${path} ${op} ${JSON.stringify(value)} compares a value of the wrong type, or with an operator the attribute does not have`,
  )
