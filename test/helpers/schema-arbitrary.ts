// fast-check arbitraries from the OpenAPI document's JSON Schemas: the values a schema allows,
// its examples among them, so that generated requests are mostly valid and reach the handlers.
// A keyword this does not know fails loudly: a schema it cannot generate for must not quietly
// produce less than it says.
import fc from 'fast-check'

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema objects of every shape
export type Schema = Record<string, any>

/** Keywords that say nothing about which values to generate. */
const INERT = new Set(['description', 'default', 'examples', 'readOnly', 'title', 'format'])
const HANDLED = new Set([
  '$ref',
  'const',
  'enum',
  'anyOf',
  'type',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'properties',
  'required',
  'additionalProperties',
  'minProperties',
  'patternProperties',
])

/** Strings stay short: the point is shapes and edges, not volume. */
const LONGEST = 40

export function arbitraryOf(
  schema: Schema,
  resolve: (ref: string) => Schema,
): fc.Arbitrary<unknown> {
  for (const key of Object.keys(schema)) {
    if (!INERT.has(key) && !HANDLED.has(key)) throw new Error(`no generator for keyword ${key}`)
  }
  if (typeof schema.$ref === 'string') return arbitraryOf(resolve(schema.$ref), resolve)
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  if (Array.isArray(schema.anyOf)) {
    return fc.oneof(...schema.anyOf.map((option: Schema) => arbitraryOf(option, resolve)))
  }
  if (schema.type === undefined) return fc.jsonValue()
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type]
  const generated = fc.oneof(...types.map((type) => ofType(type, schema, resolve)))
  const examples = Array.isArray(schema.examples) ? schema.examples : []
  return examples.length === 0
    ? generated
    : fc.oneof(
        { arbitrary: fc.constantFrom(...examples), weight: 2 },
        { arbitrary: generated, weight: 1 },
      )
}

function ofType(
  type: string,
  schema: Schema,
  resolve: (ref: string) => Schema,
): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null)
    case 'boolean':
      return fc.boolean()
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 })
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true })
    case 'string':
      return stringOf(schema)
    case 'array':
      return arrayOf(schema, resolve)
    case 'object':
      return objectOf(schema, resolve)
    default:
      throw new Error(`no generator for type ${String(type)}`)
  }
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? LONGEST, LONGEST))
  if (typeof schema.pattern === 'string' && schema.pattern !== '^(.*)$') {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((text) => text.length >= minLength && text.length <= (schema.maxLength ?? Infinity))
  }
  switch (schema.format) {
    case 'email':
      return fc.emailAddress().filter((email) => email.length <= (schema.maxLength ?? 254))
    case 'date-time':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((date) => date.toISOString())
    case 'uri':
      return fc.oneof(fc.webUrl(), fc.constant('http://127.0.0.1:9/hook'))
    default:
      return fc.string({ minLength, maxLength, unit: 'grapheme' })
  }
}

function arrayOf(schema: Schema, resolve: (ref: string) => Schema): fc.Arbitrary<unknown[]> {
  const items = arbitraryOf(schema.items ?? {}, resolve)
  const minLength = schema.minItems ?? 0
  const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 4, 4))
  return schema.uniqueItems === true
    ? fc.uniqueArray(items, { minLength, maxLength, selector: (value) => JSON.stringify(value) })
    : fc.array(items, { minLength, maxLength })
}

function objectOf(schema: Schema, resolve: (ref: string) => Schema): fc.Arbitrary<unknown> {
  const properties: Record<string, Schema> = schema.properties ?? {}
  const model = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [name, arbitraryOf(property, resolve)]),
  )
  const record = fc.record(model, { requiredKeys: schema.required ?? [] })
  const least = schema.minProperties ?? 0
  return least === 0 ? record : record.filter((value) => Object.keys(value).length >= least)
}
