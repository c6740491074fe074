import { Elysia, ParseError, ValidationError } from 'elysia'
import { AppError, badRequest, ScimError, type ScimType, validationFailed } from '../errors/errors'
import type { Logger } from '../log'
import { jsonResponse, type MappedAnswer } from './json-response'
import { publicBaseUrl } from './request-context'
import { pathOf, type RouteTable } from './route-table'
import { CATCH_ALL, notFoundOrMethodNotAllowed } from './unrouted'
import { detailsFromValidation } from './validation'

export interface ErrorHandlerOptions {
  publicUrl: string | null
  routes: RouteTable
  log: Logger
  /** Told of every error answer (for the access log and metrics). */
  onAnswer?: (answer: MappedAnswer) => void
  /** Told of every 507: a write was refused for lack of space (for /health and one log line). */
  onDiskFull?: () => void
}

/**
 * Turns anything thrown anywhere (routing, parsing, validation, handlers) into the contract's
 * JSON envelope. Unexpected errors are logged with the request id and answered with a fixed
 * message, so no stack, SQL or internal detail reaches the client.
 */
export function errorHandler(options: ErrorHandlerOptions) {
  return new Elysia({ name: 'error-handler' }).onError(
    { as: 'global' },
    function renderError({ error, code, request, set, route }) {
      const requestId = String(set.headers['x-request-id'] ?? '')
      // Before routing (an onRequest hook threw) there is no route yet: label it by path.
      const label = typeof route === 'string' && route !== '' ? route : CATCH_ALL
      if (request.signal.aborted) return clientGone(error, request, set, label, requestId)
      const appError = toAppError(error, code, request, options, requestId)
      if (appError.errorCode === 'INSUFFICIENT_STORAGE') options.onDiskFull?.()
      const scim = isScimPath(request.url)
      const response = scim
        ? scimErrorResponse(appError, requestId)
        : errorResponse(appError, requestId, publicBaseUrl(request, options.publicUrl))
      set.status = response.status
      const length = response.headers.get('content-length')
      set.headers['content-length'] = length ?? undefined
      options.onAnswer?.({
        set,
        request,
        route: label,
        status: response.status,
        bytes: request.method === 'HEAD' ? 0 : Number(length ?? 0),
        requestId,
      })
      return response
    },
  )

  /**
   * The client closed the connection before its request was read or answered (an upload cut
   * off, a client timing out): nobody reads the answer and nothing in roster failed. Recorded
   * as 499 (nginx's "client closed request") in the access log and metrics, logged at info,
   * so a slow or vanishing client cannot trip 5xx alerts. An error that is not about the body
   * being cut short is still logged as the internal error it is.
   */
  function clientGone(
    error: unknown,
    request: Request,
    set: { status?: number | string; headers: Record<string, unknown> },
    route: string,
    requestId: string,
  ): Response {
    const path = pathOf(request.url)
    if (!isAboutTheClient(error)) internalError(error, request, options.log, requestId)
    options.log.info('client closed the connection before the answer', {
      request_id: requestId,
      method: request.method,
      path,
    })
    set.status = CLIENT_CLOSED_REQUEST
    options.onAnswer?.({
      set,
      request,
      route,
      status: CLIENT_CLOSED_REQUEST,
      bytes: 0,
      requestId,
    })
    return new Response(null, { status: CLIENT_CLOSED_REQUEST })
  }
}

/** Not an HTTP status a client ever sees: the access log's and metrics' mark for "client left". */
export const CLIENT_CLOSED_REQUEST = 499

/** Errors that a body cut off midway causes (read aborted, parse of a partial body, our 4xx). */
function isAboutTheClient(error: unknown): boolean {
  return (
    error instanceof AppError ||
    error instanceof ParseError ||
    error instanceof ValidationError ||
    (error as { name?: unknown } | null)?.name === 'AbortError'
  )
}

/** The envelope's fields for an error. */
export function errorBody(error: AppError, requestId: string, docsBase: string) {
  return {
    error: {
      code: error.errorCode,
      message: error.message,
      details: error.details,
      documentation_url: `${docsBase}/docs/errors#${error.errorCode}`,
    },
    request_id: requestId,
  }
}

/** The envelope as a Response; also used outside Elysia (the server's last-resort handler). */
export function errorResponse(error: AppError, requestId: string, docsBase: string): Response {
  return jsonResponse(errorBody(error, requestId, docsBase), error.status, {
    'x-request-id': requestId,
    ...error.headers,
  })
}

/** Whether a request is SCIM's (`/scim/v2/…`, any case): its errors take SCIM's form. */
export function isScimPath(url: string): boolean {
  return /^\/scim\/v2(\/|$)/i.test(pathOf(url))
}

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error'
/** SCIM's media type (RFC 7644 section 3.1), on its answers and its errors alike. */
export const SCIM_JSON = 'application/scim+json; charset=utf-8'

/** The scimType an error of roster's own kind has under SCIM (RFC 7644 section 3.12). */
function scimTypeOf(error: AppError): ScimType | null {
  if (error instanceof ScimError) return error.scimType
  if (error.errorCode === 'CONFLICT') {
    // A taken name is uniqueness; another conflict (the last admin's seat) has no scimType.
    const field = error.details[0]?.field
    return field === 'email' || field === 'username' || field === 'name' ? 'uniqueness' : null
  }
  if (error.errorCode === 'VALIDATION_ERROR') return 'invalidValue'
  if (error.errorCode === 'BAD_REQUEST') return 'invalidSyntax'
  return null
}

/**
 * SCIM's error form (RFC 7644 section 3.12): `status` as a string, `scimType` where one
 * applies, `detail` with the message and each field's problem. The request id stays in the
 * `X-Request-Id` header.
 */
export function scimErrorResponse(error: AppError, requestId: string): Response {
  const problems = error.details.map((detail) => `${detail.field}: ${detail.message}`)
  const scimType = scimTypeOf(error)
  // SCIM has no 422: a value refused is 400 invalidValue (RFC 7644 section 3.12).
  const status = error.status === 422 ? 400 : error.status
  const body = {
    schemas: [SCIM_ERROR],
    status: String(status),
    ...(scimType === null ? {} : { scimType }),
    detail: problems.length === 0 ? error.message : `${error.message}: ${problems.join('; ')}`,
  }
  return jsonResponse(body, status, {
    'content-type': SCIM_JSON,
    'x-request-id': requestId,
    ...error.headers,
  })
}

function toAppError(
  error: unknown,
  code: unknown,
  request: Request,
  options: ErrorHandlerOptions,
  requestId: string,
): AppError {
  if (error instanceof AppError) return error
  if (error instanceof ParseError) {
    return error.cause instanceof AppError
      ? error.cause
      : badRequest('The request body could not be parsed')
  }
  if (error instanceof ValidationError) {
    if (error.type === 'response') return internalError(error, request, options.log, requestId)
    return validationFailed(detailsFromValidation(error))
  }
  if (code === 'NOT_FOUND') return notFoundOrMethodNotAllowed(request, options.routes)
  const errno = (error as { code?: unknown } | null)?.code
  if (errno === 'ENOSPC' || errno === 'SQLITE_FULL') {
    return new AppError('INSUFFICIENT_STORAGE', 'The disk is full; nothing was stored')
  }
  if (errno === 'DATABASE_LOST') {
    return new AppError(
      'SERVICE_UNAVAILABLE',
      'The database file was removed or replaced; roster refuses writes until it is restarted',
    )
  }
  if (databaseUnreachable(error)) {
    return new AppError('SERVICE_UNAVAILABLE', 'The database is not answering; retry shortly', [], {
      'retry-after': '1',
    })
  }
  if (errno === 'SQLITE_BUSY') {
    return new AppError('SERVICE_UNAVAILABLE', 'The database is busy; retry shortly', [], {
      'retry-after': '1',
    })
  }
  return internalError(error, request, options.log, requestId)
}

/**
 * PostgreSQL down, restarting or out of connections: Bun's client reports a lost or refused
 * connection in `code`, the server its SQLSTATE in `errno` (class 08, connection exceptions;
 * 57P01–57P03, shut down or starting up; 53300, too many connections).
 */
function databaseUnreachable(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown }
  if (
    typeof code === 'string' &&
    /^(ERR_POSTGRES_CONNECTION|ERR_POSTGRES_.*TIMEOUT|ECONNREFUSED$|ECONNRESET$)/.test(code)
  ) {
    return true
  }
  return typeof errno === 'string' && /^(08|57P0[123]$|53300$)/.test(errno)
}

function internalError(error: unknown, request: Request, log: Logger, requestId: string): AppError {
  log.error('unhandled error', {
    request_id: requestId,
    method: request.method,
    path: pathOf(request.url),
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  })
  return new AppError('INTERNAL_ERROR', 'Something went wrong inside roster')
}
