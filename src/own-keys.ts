/**
 * Names that lead out of an object into its prototype when used as a key: `obj.__proto__` is
 * Object.prototype, `obj.constructor.prototype` too. Request data never names them (CONTRACT
 * section 17): a body, a query, a SCIM path or filter that does is refused before anything
 * builds an object from it, so no merge, patch or lookup downstream can be turned into a write
 * to (or a read from) a prototype.
 */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype'])

/** Whether a key, exactly as given, leads into a prototype. */
export function isPrototypeKey(key: string): boolean {
  return PROTOTYPE_KEYS.has(key)
}

/**
 * Whether a dotted or bracketed name (`a.b`, `filter[__proto__]`, `urn:…:User:name.x`) has a
 * segment that leads into a prototype, in any case: SCIM and query names are matched without
 * regard to case by some readers, so `__PROTO__` is refused as well.
 */
export function reachesPrototype(name: string): boolean {
  const folded = name.toLowerCase()
  if (!folded.includes('proto') && !folded.includes('constructor')) return false
  return folded.split(/[.[\]:]/).some((segment) => PROTOTYPE_KEYS.has(segment.trim()))
}

/**
 * The value a record holds under `key` itself, never one its prototype supplies: a lookup by a
 * name that came from a request (`ATTRIBUTES[name]`) must not find `constructor`.
 */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}
