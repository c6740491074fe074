import { scimBadRequest } from '../errors/errors'
import { reachesPrototype } from '../own-keys'
import { attributePaths, parseTree } from './filter'
import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from './names'

/**
 * The attribute names RFC 7643's schemas give each resource, lower-cased: what a PATCH path may
 * name (RFC 7644 section 3.5.2). A name outside them is 400 invalidPath before scim-patch sees
 * it, so a path is resolved against the schema and never walked through whatever object the
 * library builds (`__proto__.x` once wrote into Object.prototype). Attributes roster does not
 * store (title, phoneNumbers) are named here too: a PATCH of one is accepted and changes
 * nothing, as a PUT that carries one.
 */
interface Attribute {
  /** The sub-attributes of a complex attribute; null for a simple one. */
  sub: ReadonlySet<string> | null
  /** Whether a value path (`emails[type eq "work"]`) may filter its values. */
  multi: boolean
}
type Attributes = ReadonlyMap<string, Attribute>

const simple: Attribute = { sub: null, multi: false }
const complex = (...sub: string[]): Attribute => ({ sub: new Set(sub), multi: false })
const multiValued = (...sub: string[]): Attribute => ({ sub: new Set(sub), multi: true })
const PLURAL = ['value', 'display', 'type', 'primary', '$ref']

const COMMON: [string, Attribute][] = [
  ['schemas', simple],
  ['id', simple],
  ['externalid', simple],
  ['meta', complex('resourcetype', 'created', 'lastmodified', 'location', 'version')],
]

const USER_CORE: Attributes = new Map<string, Attribute>([
  ...COMMON,
  ['username', simple],
  [
    'name',
    complex(
      'formatted',
      'familyname',
      'givenname',
      'middlename',
      'honorificprefix',
      'honorificsuffix',
    ),
  ],
  ['displayname', simple],
  ['nickname', simple],
  ['profileurl', simple],
  ['title', simple],
  ['usertype', simple],
  ['preferredlanguage', simple],
  ['locale', simple],
  ['timezone', simple],
  ['active', simple],
  ['password', simple],
  ['emails', multiValued(...PLURAL)],
  ['phonenumbers', multiValued(...PLURAL)],
  ['ims', multiValued(...PLURAL)],
  ['photos', multiValued(...PLURAL)],
  [
    'addresses',
    multiValued(
      'formatted',
      'streetaddress',
      'locality',
      'region',
      'postalcode',
      'country',
      'type',
      'primary',
    ),
  ],
  ['groups', multiValued(...PLURAL)],
  ['entitlements', multiValued(...PLURAL)],
  ['roles', multiValued(...PLURAL)],
  ['x509certificates', multiValued(...PLURAL)],
])

const USER_ENTERPRISE: Attributes = new Map<string, Attribute>([
  ['employeenumber', simple],
  ['costcenter', simple],
  ['organization', simple],
  ['division', simple],
  ['department', simple],
  ['manager', complex('value', '$ref', 'displayname')],
])

const GROUP_CORE: Attributes = new Map<string, Attribute>([
  ...COMMON,
  ['displayname', simple],
  ['members', multiValued('value', '$ref', 'display', 'type')],
])

export type ScimResourceType = 'user' | 'group'

/** Each schema a resource's path may start with, and the attributes it defines. */
const SCHEMAS: Record<ScimResourceType, [urn: string, attributes: Attributes][]> = {
  user: [
    [USER_SCHEMA.toLowerCase(), USER_CORE],
    [ENTERPRISE_SCHEMA.toLowerCase(), USER_ENTERPRISE],
  ],
  group: [[GROUP_SCHEMA.toLowerCase(), GROUP_CORE]],
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub` (the URN already taken off). */
const PATH = /^([a-z][\w$-]*)(?:\[(.*)\])?(?:\.([a-z$][\w$-]*))?$/is

/**
 * Checks a PATCH path against the resource's schemas: 400 invalidPath when it names an
 * attribute or sub-attribute they do not define (or one leading into a prototype), when a
 * filter is put on an attribute that is not multi-valued, or names what the attribute's values
 * do not have. A path-less operation's value keys are checked the same way.
 */
export function checkPatchPath(path: string, resource: ScimResourceType): void {
  const invalid = () =>
    scimBadRequest('invalidPath', `${JSON.stringify(path)} is not an attribute of a ${resource}`)
  if (reachesPrototype(path)) throw invalid()
  const folded = path.toLowerCase()
  const schemas = SCHEMAS[resource]
  const named = schemas.find(([urn]) => folded.startsWith(`${urn}:`))
  // The extension's URN alone names its whole object (a path-less value may carry it too).
  if (schemas.some(([urn], index) => index > 0 && folded === urn)) return
  if (named === undefined && folded.startsWith('urn:')) throw invalid()
  const rest = named === undefined ? path : path.slice(named[0].length + 1)
  const match = PATH.exec(rest)
  if (match === null) throw invalid()
  const [, name = '', filter, subName] = match
  const candidates = named === undefined ? schemas.map(([, attributes]) => attributes) : [named[1]]
  const attribute = candidates.map((attributes) => attributes.get(name.toLowerCase())).find(Boolean)
  if (attribute === undefined) throw invalid()
  if (subName !== undefined && !attribute.sub?.has(subName.toLowerCase())) throw invalid()
  if (filter === undefined) return
  if (!attribute.multi) throw invalid()
  if (!filterNames(filter).every((inside) => attribute.sub?.has(inside))) throw invalid()
}

/** The names a value path's filter compares, lower-cased; none when it cannot be parsed. */
function filterNames(filter: string): string[] {
  try {
    return attributePaths(parseTree(filter)).map((name) => name.toLowerCase())
  } catch {
    // In a path, a filter that cannot be read makes the path one that names nothing.
    return ['']
  }
}
