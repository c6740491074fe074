import { type ScimPatchOperation, type ScimResource, scimPatch } from 'scim-patch'
import { AppError, ScimError, type ScimType, scimBadRequest } from '../errors/errors'
import { checkPatchPath, type ScimResourceType } from './attributes'
import { attributeKey, attributeValue, ENTERPRISE_SCHEMA, PATCH_SCHEMA } from './names'

/** The names PATCH paths and values may use, by their lower-cased form, as roster writes them. */
const CANONICAL = new Map(
  [
    'userName',
    'displayName',
    'name',
    'givenName',
    'familyName',
    'formatted',
    'emails',
    'value',
    'type',
    'primary',
    'display',
    'active',
    'externalId',
    'password',
    'employeeNumber',
    'department',
    'manager',
    'members',
    'schemas',
  ].map((name) => [name.toLowerCase(), name]),
)

/** Attributes no PATCH may change (RFC 7643: readOnly). */
const READ_ONLY = new Set(['id', 'meta', 'groups'])

/** At most this many operations in one PATCH. */
const MAX_OPERATIONS = 100

/**
 * Applies a PatchOp (RFC 7644 section 3.5.2) to a resource as roster shows it, with
 * scim-patch: `add`, `remove`, `replace` in any case, with or without `path`, value paths
 * (`emails[type eq "work"].value`, `members[value eq "2"]`). Every path, and every key of a
 * path-less value, is first checked against the resource type's schema (scim/attributes.ts:
 * 400 invalidPath for a name it does not define); names are then matched without regard to
 * case. The caller reads the result as it reads a PUT body, so a patched resource meets the
 * same rules as a replaced one.
 */
export function applyPatch(
  resource: Record<string, unknown>,
  body: Record<string, unknown>,
  type: ScimResourceType,
): Record<string, unknown> {
  const schemas = attributeValue(body, 'schemas')
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_SCHEMA)) {
    throw scimBadRequest('invalidSyntax', `A PATCH body's schemas must hold ${PATCH_SCHEMA}`)
  }
  const operations = attributeValue(body, 'Operations')
  if (!Array.isArray(operations) || operations.length === 0) {
    throw scimBadRequest('invalidSyntax', 'A PATCH body needs Operations: an array of operations')
  }
  if (operations.length > MAX_OPERATIONS) {
    throw scimBadRequest('tooMany', `A PATCH may hold at most ${MAX_OPERATIONS} operations`)
  }
  const normalised = operations.map((operation, index) =>
    normaliseOperation(operation, index, type),
  )
  try {
    const patched: unknown = scimPatch(
      structuredClone(resource) as unknown as ScimResource,
      normalised,
    )
    // An operation on the whole resource (an empty path) can leave something else in its place.
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) {
      throw scimBadRequest('invalidValue', 'The PATCH leaves no resource behind')
    }
    return patched as Record<string, unknown>
  } catch (error) {
    if (error instanceof ScimError) throw error
    const scimType = (error as { scimType?: string }).scimType
    throw scimBadRequest(
      (scimType as ScimType | undefined) ?? 'invalidValue',
      `The PATCH cannot be applied: ${(error as Error).message}`,
    )
  }
}

function normaliseOperation(
  operation: unknown,
  index: number,
  type: ScimResourceType,
): ScimPatchOperation {
  if (typeof operation !== 'object' || operation === null || Array.isArray(operation)) {
    throw scimBadRequest('invalidSyntax', `Operations[${index}] must be an object`)
  }
  const op = attributeValue(operation as Record<string, unknown>, 'op')
  const path = attributeValue(operation as Record<string, unknown>, 'path')
  const value = attributeValue(operation as Record<string, unknown>, 'value')
  if (typeof op !== 'string' || !['add', 'remove', 'replace'].includes(op.toLowerCase())) {
    throw scimBadRequest('invalidSyntax', `Operations[${index}].op must be add, remove or replace`)
  }
  if (path !== undefined && (typeof path !== 'string' || path.trim() === '')) {
    throw scimBadRequest('invalidPath', `Operations[${index}].path must be an attribute path`)
  }
  if (path !== undefined) checkPatchPath(path, type)
  if (path === undefined && isPlainObject(value)) {
    for (const key of Object.keys(value)) checkPatchPath(key, type)
  }
  if (path === undefined && op.toLowerCase() === 'remove') {
    throw scimBadRequest('noTarget', `Operations[${index}] removes without a path`)
  }
  if (path !== undefined && READ_ONLY.has(attributeKey(path).split(/[.[]/)[0] ?? '')) {
    throw scimBadRequest('mutability', `${path} is read-only`)
  }
  return {
    op: op.toLowerCase(),
    ...(path === undefined ? {} : { path: canonicalPath(path) }),
    ...(value === undefined ? {} : { value: path === undefined ? canonicalKeys(value) : value }),
  } as ScimPatchOperation
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `Name.GivenName` → `name.givenName`; names inside a value filter and URNs are kept. */
function canonicalPath(path: string): string {
  const enterprise = `${ENTERPRISE_SCHEMA}:`
  if (path.toLowerCase().startsWith(enterprise.toLowerCase())) {
    return enterprise + canonicalPath(path.slice(enterprise.length))
  }
  return path.replace(/(^|[.\]])([A-Za-z$][\w$-]*)/g, (_, lead: string, name: string) => {
    return lead + (CANONICAL.get(name.toLowerCase()) ?? name)
  })
}

/** A path-less value's keys (`Active`, `name.GivenName`) as roster writes them. */
function canonicalKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) {
    // Okta sends the id along with a group's new name ({"id": …, "displayName": …}): a
    // read-only attribute in a path-less value is left as it is, as a PUT leaves it.
    if (READ_ONLY.has(attributeKey(key))) continue
    const isEnterprise = key.toLowerCase() === ENTERPRISE_SCHEMA.toLowerCase()
    out[isEnterprise ? ENTERPRISE_SCHEMA : canonicalPath(key)] = isEnterprise
      ? canonicalKeys(inner)
      : inner
  }
  return out
}

/** How often a PATCH without If-Match reads again when another write came between. */
const PATCH_ATTEMPTS = 3

/** What a PATCH makes of the resource it read, and how it is stored. */
export interface PatchSteps<R, I> {
  /** The resource as the PatchOp leaves it, read as a PUT body would be. */
  apply(current: R): I
  /** Whether storing `input` would leave `current` as it is. */
  changesNothing(current: R, input: I): boolean
  /** Stores `input` on the condition that the record is still one of the `accepted` versions. */
  store(input: I, accepted: readonly number[]): Promise<R>
}

/**
 * A PATCH's read-modify-write: stores what it made of the resource read, on the condition that
 * the record is still the version read. A write that came between is read again (a PATCH names
 * changes, not a whole resource), unless the client named its version with If-Match: then it
 * is 412. A PATCH that changes nothing (Entra sends attributes again on each cycle, Okta adds
 * members a group has) answers the resource as it is: no write, no new version, no event; a
 * stale If-Match is still 412. null when there is no such resource.
 */
export async function patchOnVersionRead<R, I>(
  read: () => Promise<R | null>,
  versionOf: (current: R) => number,
  steps: PatchSteps<R, I>,
  versions: readonly number[] | null,
): Promise<R | null> {
  for (let attempt = 1; ; attempt++) {
    const current = await read()
    if (current === null) return null
    const version = versionOf(current)
    const accepted = versions === null ? [version] : versions.filter((v) => v === version)
    const input = steps.apply(current)
    if (accepted.length > 0 && steps.changesNothing(current, input)) return current
    try {
      return await steps.store(input, accepted)
    } catch (error) {
      const raced =
        error instanceof AppError &&
        error.errorCode === 'PRECONDITION_FAILED' &&
        versions === null &&
        attempt < PATCH_ATTEMPTS
      if (!raced) throw error
    }
  }
}
