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

/** One answer as it leaves a route: what the access log records. */
export interface MappedAnswer {
  /** Elysia's per-request `set`, for hooks that keep per-request state on it. */
  set: object
  request: Request
  /** The matched route template (the catch-all's `/*` for 404 and 405 answers). */
  route: string
  status: number
  /** Body size in bytes, or null when it is not known without reading the body. */
  bytes: number | null
  requestId: string
}

/**
 * Serializes every object a handler returns, once, with its length, and reports every answer
 * (errors included: every request reaches a route, the catch-all among them) to `onAnswer`.
 * Returning the text, not a Response, lets Elysia build the answer in one step from `set`.
 * One hook does both because Elysia stops at the first mapResponse hook that returns a value.
 */
export function jsonResponses(onAnswer?: (answer: MappedAnswer) => void) {
  return new Elysia({ name: 'json-responses' }).mapResponse(
    { as: 'global' },
    // Destructured on purpose: Elysia reads this source to decide what to parse per request.
    function serializeJson({ request, responseValue, set, route }) {
      const isJson =
        responseValue !== null &&
        typeof responseValue === 'object' &&
        !(responseValue instanceof Response) &&
        !(responseValue instanceof Blob)
      const text = isJson ? JSON.stringify(responseValue) : undefined
      if (text !== undefined) {
        set.headers['content-type'] = JSON_TYPE
        set.headers['content-length'] = String(Buffer.byteLength(text))
      }
      if (onAnswer !== undefined) {
        onAnswer({
          set,
          request,
          route,
          status:
            responseValue instanceof Response
              ? responseValue.status
              : typeof set.status === 'number'
                ? set.status
                : 200,
          bytes:
            request.method === 'HEAD'
              ? 0
              : bodySize(set.headers['content-length'], text ?? responseValue),
          requestId: String(set.headers['x-request-id'] ?? '-'),
        })
      }
      // Typed as Response-only, but Elysia maps a string with `new Response(text, set)`.
      return text as unknown as Response | undefined
    },
  )
}

/** The body size in bytes when it can be known without reading the body, else null. */
function bodySize(declared: unknown, value: unknown): number | null {
  if (declared !== undefined) return Number(declared)
  if (typeof value === 'string') return Buffer.byteLength(value)
  if (value instanceof Response) {
    const header = value.headers.get('content-length')
    if (header !== null) return Number(header)
    return value.body === null ? 0 : null
  }
  return null
}
