import { fieldDetail } from '../errors/details'
import {
  badRequest,
  payloadTooLarge,
  ScimError,
  unsupportedMediaType,
  validationFailed,
} from '../errors/errors'
import { isPrototypeKey } from '../own-keys'

/** JSON bodies larger than this are refused with 413 before they are read in full. */
export const MAX_JSON_BYTES = 1024 * 1024

interface ParseContext {
  request: Request
  contentType: string
}

/**
 * An Elysia `parse` function for JSON routes: refuses other media types (415), bodies over
 * 1 MiB (413, counted while reading, so a chunked body cannot slip past), malformed JSON (400),
 * and anything but a JSON object (422). Errors are AppErrors; the error handler unwraps them
 * from Elysia's ParseError.
 */
export function jsonBody(
  mediaTypes: readonly string[] = ['application/json'],
  options: { optional?: boolean } = {},
) {
  const accepted = new Set(mediaTypes)
  const expected = mediaTypes.join(' or ')
  // 'application/json' after our parser never runs (ours always returns or throws); it is
  // there so the OpenAPI plugin documents the body as JSON (it skips function parsers).
  return [parseJsonBody, 'application/json' as const]

  async function parseJsonBody({ request, contentType }: ParseContext): Promise<object> {
    const type = mediaTypeOf(request, contentType)
    // A route whose body may be left out (SCIM's, which every method reaches): no bytes is an
    // empty object, whatever the type says.
    let text: string | null = null
    if (options.optional === true) {
      text = await readText(request, MAX_JSON_BYTES)
      if (text === '') return {}
    }
    if (!accepted.has(type)) {
      throw unsupportedMediaType(
        type === ''
          ? `Send the body as ${expected}`
          : `${type} is not accepted here; send ${expected}`,
      )
    }
    requireUtf8Charset(request.headers.get('content-type'))
    text ??= await readText(request, MAX_JSON_BYTES)
    if (text.trim() === '') throw badRequest('The request body is empty; send a JSON object')
    return parseJsonObject(text)
  }
}

/**
 * The request's media type, lower-cased, without parameters. Elysia hands a parser an empty
 * `contentType` when the request has no body at all, so an empty body sent with the right type
 * would read as "no type" (415) where the contract says "empty body" (400): read the header then.
 */
export function mediaTypeOf(request: Request, contentType: string): string {
  const given = contentType === '' ? (request.headers.get('content-type') ?? '') : contentType
  return (given.split(';', 1)[0] ?? '').trim().toLowerCase()
}

/**
 * A JSON object from text: BAD_REQUEST when it is not JSON, VALIDATION_ERROR when it is not an
 * object, when one of its objects gives a key twice (JSON.parse would keep the last one
 * silently, and a reader that keeps the first would see another request), or when a key at any
 * depth is `__proto__`, `constructor` or `prototype` (JSON.parse makes them own keys, TypeBox's
 * unknown-field check skips `__proto__`, and any merge or patch downstream would follow them
 * into a prototype: CONTRACT section 17). Under /scim/v2 the last is SCIM's `invalidPath`.
 */
export function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw badRequest('The request body is not valid JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw validationFailed([fieldDetail('body', 'must be a JSON object', value)])
  }
  const problem = keyProblem(text)
  if (problem?.kind === 'prototype') throw prototypeKeyRefused(problem.path)
  if (problem !== null) {
    throw validationFailed([
      fieldDetail(problem.path, 'is given more than once in the same object'),
    ])
  }
  return value as Record<string, unknown>
}

/** The answer to a key that leads into a prototype: 422 (SCIM: 400 invalidPath), naming it. */
export function prototypeKeyRefused(path: string): ScimError {
  return new ScimError(
    'VALIDATION_ERROR',
    'invalidPath',
    'The request names a key no object may have',
    [fieldDetail(path, 'is not a name a field may have (__proto__, constructor, prototype)')],
  )
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads the body as UTF-8 text, refusing with 413 once it passes `limit` bytes and with 400
 * when it is not valid UTF-8 (never stored with U+FFFD in place of what was sent).
 */
export async function readText(request: Request, limit: number): Promise<string> {
  const bytes = await readBytes(request, limit)
  try {
    return utf8.decode(bytes)
  } catch {
    throw badRequest('The request body is not valid UTF-8')
  }
}

const CHARSET = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i

/** JSON is UTF-8 (RFC 8259): a Content-Type naming another charset is a 415, not a guess. */
export function requireUtf8Charset(contentType: string | null): void {
  const charset = CHARSET.exec(contentType ?? '')?.[2]?.toLowerCase()
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return
  throw unsupportedMediaType(`charset=${charset} is not accepted; send JSON as UTF-8`)
}

interface Scope {
  /** The keys seen so far, for an object; null for an array. */
  keys: Set<string> | null
  path: string
  /** The last key (object) or the index of the current item (array). */
  at: string | number
  expectKey: boolean
}

/** A key of a JSON text that is refused: given twice in one object, or leading to a prototype. */
export interface KeyProblem {
  kind: 'repeated' | 'prototype'
  /** Where it is: `email`, `address.city`, `items.0.name`. */
  path: string
}

/**
 * The path (`email`, `address.city`, `items.0.name`) of the first key given twice in one
 * object of `text`, which must be valid JSON; null when there is none.
 */
export function duplicateKey(text: string): string | null {
  const problem = keyProblem(text)
  return problem?.kind === 'repeated' ? problem.path : null
}

/**
 * The first refused key of `text`, which must be valid JSON: one given twice in one object, or
 * one of `__proto__`, `constructor`, `prototype` at any depth; null when there is none. One
 * pass, jumping from quote to quote inside strings, so a 1 MiB body costs about a millisecond.
 */
export function keyProblem(text: string): KeyProblem | null {
  const scopes: Scope[] = []
  let top: Scope | undefined
  const childPath = () =>
    top === undefined ? '' : top.path === '' ? String(top.at) : `${top.path}.${top.at}`
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const end = closingQuote(text, i)
      if (top?.keys && top.expectKey) {
        const raw = text.slice(i, end + 1)
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1)
        const path = top.path === '' ? key : `${top.path}.${key}`
        if (isPrototypeKey(key)) return { kind: 'prototype', path }
        if (top.keys.has(key)) return { kind: 'repeated', path }
        top.keys.add(key)
        top.at = key
        top.expectKey = false
      }
      i = end
    } else if (c === 0x7b || c === 0x5b) {
      const scope: Scope = {
        keys: c === 0x7b ? new Set() : null,
        path: childPath(),
        at: 0,
        expectKey: c === 0x7b,
      }
      scopes.push(scope)
      top = scope
    } else if (c === 0x7d || c === 0x5d) {
      scopes.pop()
      top = scopes.at(-1)
    } else if (c === 0x2c && top !== undefined) {
      if (top.keys !== null) top.expectKey = true
      else top.at = (top.at as number) + 1
    }
  }
  return null
}

/** The index of the quote that ends the string opening at `start`. */
function closingQuote(text: string, start: number): number {
  let quote = text.indexOf('"', start + 1)
  for (;;) {
    let backslashes = 0
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++
    if (backslashes % 2 === 0) return quote
    quote = text.indexOf('"', quote + 1)
  }
}

/**
 * Reads the exact body bytes, refusing with 413 once they pass `limit`: at once when
 * Content-Length says so, else while counting (a chunked body cannot slip past).
 */
export async function readBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  // A body framed by Content-Length is that many bytes and no more (the server reads exactly
  // those): read it in one native call, without a stream and its async iterator per request.
  if (declared !== null && !request.headers.has('transfer-encoding')) {
    return await request.bytes()
  }
  if (request.body === null) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    chunks.push(chunk)
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks)
}

function tooLarge(limit: number) {
  return payloadTooLarge(`The body is over the ${limit / 1024} KiB limit for this route`)
}
