import { badRequest, payloadTooLarge, unsupportedMediaType, validationFailed } from './errors'
import { fieldDetail } from './validation'

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
export function jsonBody(mediaTypes: readonly string[] = ['application/json']) {
  const accepted = new Set(mediaTypes)
  const expected = mediaTypes.join(' or ')
  // 'application/json' after our parser never runs (ours always returns or throws); it is
  // there so the OpenAPI plugin documents the body as JSON (it skips function parsers).
  return [parseJsonBody, 'application/json' as const]

  async function parseJsonBody({ request, contentType }: ParseContext): Promise<object> {
    const type = contentType.trim().toLowerCase()
    if (!accepted.has(type)) {
      throw unsupportedMediaType(
        type === ''
          ? `Send the body as ${expected}`
          : `${type} is not accepted here; send ${expected}`,
      )
    }
    const text = await readText(request, MAX_JSON_BYTES)
    if (text.trim() === '') throw badRequest('The request body is empty; send a JSON object')
    const value = parseJsonObject(text)
    // JSON.parse makes `__proto__` an own key, and TypeBox's unknown-field check skips it.
    if (Object.hasOwn(value, '__proto__')) {
      throw validationFailed([fieldDetail('__proto__', 'is not a known field')])
    }
    return value
  }
}

/** A JSON object from text: BAD_REQUEST when it is not JSON, VALIDATION_ERROR when not an object. */
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
  return value as Record<string, unknown>
}

/** Reads the body as UTF-8 text, refusing with 413 once it passes `limit` bytes. */
export async function readText(request: Request, limit: number): Promise<string> {
  return Buffer.from(await readBytes(request, limit)).toString('utf8')
}

/**
 * Reads the exact body bytes, refusing with 413 once they pass `limit`: at once when
 * Content-Length says so, else while counting (a chunked body cannot slip past).
 */
export async function readBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
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
