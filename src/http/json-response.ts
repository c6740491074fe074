import { Elysia } from 'elysia'

export const JSON_TYPE = 'application/json; charset=utf-8'

/** A JSON answer with Content-Length set, so the access log can report its size. */
export function jsonResponse(
  body: unknown,
  status: number,
  headers: Record<string, string> = {},
): Response {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return new Response(text, {
    status,
    headers: {
      'content-type': JSON_TYPE,
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    },
  })
}

/**
 * Serializes every object a handler returns, once, with its length. (Elysia's own mapping
 * sends the same JSON but without Content-Length visible to the access log.)
 */
export const jsonResponses = new Elysia({ name: 'json-responses' }).mapResponse(
  { as: 'global' },
  function serializeJson({ responseValue, set }) {
    if (
      responseValue === null ||
      typeof responseValue !== 'object' ||
      responseValue instanceof Response ||
      responseValue instanceof Blob
    ) {
      return
    }
    const text = JSON.stringify(responseValue)
    set.headers['content-type'] = JSON_TYPE
    set.headers['content-length'] = String(Buffer.byteLength(text))
    return new Response(text)
  },
)
