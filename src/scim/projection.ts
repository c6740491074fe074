import { scimBadRequest } from '../errors/errors'
import { reachesPrototype } from '../own-keys'
import { attributeKey } from './names'

/** Attributes every answer carries, whatever `attributes` or `excludedAttributes` say. */
const ALWAYS = new Set(['schemas', 'id', 'meta'])

/** A parsed `attributes` or `excludedAttributes` list: lower-cased paths, URNs removed. */
export interface Projection {
  attributes: string[] | null
  excluded: string[]
}

/** At most this many names in `attributes` or `excludedAttributes`. */
const MAX_NAMES = 50

/** Reads the two query parameters (RFC 7644 section 3.4.2.5); both given is refused. */
export function readProjection(attributes: string | null, excluded: string | null): Projection {
  const names = (text: string | null) =>
    text === null
      ? null
      : text
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '')
  const wanted = names(attributes)
  const unwanted = names(excluded) ?? []
  const reaching = [...(wanted ?? []), ...unwanted].find(reachesPrototype)
  if (reaching !== undefined) {
    throw scimBadRequest('invalidPath', `${JSON.stringify(reaching)} names no attribute`)
  }
  if ((wanted?.length ?? 0) > MAX_NAMES || unwanted.length > MAX_NAMES) {
    throw scimBadRequest(
      'invalidValue',
      `attributes and excludedAttributes take at most ${MAX_NAMES} names`,
    )
  }
  return {
    attributes: wanted === null ? null : wanted.map(attributeKey),
    excluded: unwanted.map(attributeKey),
  }
}

/**
 * The resource with only the attributes asked for (and those always returned), or without the
 * ones excluded. Sub-attributes (`name.givenName`) and the enterprise extension's attributes
 * (by their URN-qualified name or their own) are both understood.
 */
export function project(
  resource: Record<string, unknown>,
  projection: Projection,
  extensionSchemas: readonly string[],
): Record<string, unknown> {
  if (projection.attributes === null && projection.excluded.length === 0) return resource
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(resource)) {
    const folded = key.toLowerCase()
    if (extensionSchemas.some((schema) => schema.toLowerCase() === folded)) {
      const inner = projectObject(value as Record<string, unknown>, projection, '')
      if (Object.keys(inner).length > 0) out[key] = inner
      continue
    }
    if (ALWAYS.has(folded)) {
      out[key] = value
      continue
    }
    const kept = keep(folded, projection)
    if (kept === 'all') out[key] = value
    else if (kept === 'some' && isObject(value)) {
      const inner = projectObject(value, projection, `${folded}.`)
      if (Object.keys(inner).length > 0) out[key] = inner
    } else if (kept === 'some' && Array.isArray(value)) {
      out[key] = value.map((item) =>
        isObject(item) ? projectObject(item, projection, `${folded}.`) : item,
      )
    }
  }
  return out
}

function projectObject(
  object: Record<string, unknown>,
  projection: Projection,
  prefix: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(object)) {
    if (keep(`${prefix}${key.toLowerCase()}`, projection) !== 'none') out[key] = value
  }
  return out
}

/** Whether a path is kept whole, in part (some of its sub-attributes), or not at all. */
function keep(path: string, projection: Projection): 'all' | 'some' | 'none' {
  if (projection.excluded.includes(path)) return 'none'
  const excludedBelow = projection.excluded.some((name) => name.startsWith(`${path}.`))
  if (projection.attributes === null) return excludedBelow ? 'some' : 'all'
  const parent = path.includes('.') ? path.slice(0, path.indexOf('.')) : null
  if (
    projection.attributes.includes(path) ||
    (parent !== null && projection.attributes.includes(parent))
  ) {
    return excludedBelow ? 'some' : 'all'
  }
  return projection.attributes.some((name) => name.startsWith(`${path}.`)) ? 'some' : 'none'
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
