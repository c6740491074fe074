// The console's only way to the server: same-origin fetches that carry either the API key in
// X-API-Key (never in a URL) or an admin's session cookie (after /login), and turn roster's
// error envelope into an ApiError to show.

const KEY_SLOT = 'roster.console.key'
const ADMIN_SLOT = 'roster.console.admin'

/**
 * How the console is signed in, kept in sessionStorage (gone when the tab closes): an API key,
 * or an admin's email with the session cookie roster set (HttpOnly: the script never sees it).
 */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY_SLOT),
  admin: (): string | null => sessionStorage.getItem(ADMIN_SLOT),
  signedIn: (): boolean => session.key() !== null || session.admin() !== null,
  remember: (key: string) => sessionStorage.setItem(KEY_SLOT, key),
  rememberAdmin: (email: string) => sessionStorage.setItem(ADMIN_SLOT, email),
  forget: () => {
    sessionStorage.removeItem(KEY_SLOT)
    sessionStorage.removeItem(ADMIN_SLOT)
  },
}

/** One item of the error envelope's `details`: which field, and what is wrong with it. */
export interface FieldProblem {
  field: string
  message: string
}

/** An answer other than 2xx/304, with what roster said about it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly details: readonly FieldProblem[] = [],
  ) {
    super(message)
  }

  /** What the answer says about one field of a form (its first detail), or undefined. */
  about(field: string): string | undefined {
    return this.details.find(
      (detail) => detail.field === field || detail.field.startsWith(`${field}.`),
    )?.message
  }
}

/** The message for a form field from an error, if the error is about it. */
export function problemWith(error: unknown, field: string): string | undefined {
  return error instanceof ApiError ? error.about(field) : undefined
}

type Listener = () => void
const signedOutListeners = new Set<Listener>()

/** Called when the server refuses the key (401) while the console works. */
export function onSignedOut(listener: Listener): () => void {
  signedOutListeners.add(listener)
  return () => signedOutListeners.delete(listener)
}

export interface Answer<T> {
  status: number
  body: T
  headers: Headers
}

interface CallOptions {
  method?: string
  body?: unknown
  headers?: Record<string, string>
  /** The key to use instead of the stored one (sign-in tries a key before storing it). */
  key?: string
  /** Send the session cookie although no admin is remembered yet (sign-in). */
  withCookie?: boolean
}

/** Sends a request; throws ApiError for any error answer (after a 401, signs out). */
export async function call<T>(path: string, options: CallOptions = {}): Promise<Answer<T>> {
  const response = await send(path, options)
  const text = await response.text()
  const body = text === '' ? null : parseJson(text)
  return { status: response.status, body: body as T, headers: response.headers }
}

/** Like call, for a file-like answer: the body as a Blob and the name the server suggests. */
export async function download(path: string): Promise<{ blob: Blob; filename: string | null }> {
  const response = await send(path, {})
  return {
    blob: await response.blob(),
    filename: suggestedName(response.headers.get('content-disposition')),
  }
}

/**
 * How a request carries the console's credential: the key in X-API-Key, or (signed in as an
 * admin) the session cookie, same origin only (roster's CSRF check lets the console through).
 */
export function credentialOf(options: Pick<CallOptions, 'key' | 'withCookie'> = {}): {
  headers: Record<string, string>
  credentials: RequestCredentials
} {
  const key = options.key ?? session.key()
  const cookie = key === null && (options.withCookie === true || session.admin() !== null)
  return {
    headers: key === null ? {} : { 'x-api-key': key },
    credentials: cookie ? 'same-origin' : 'omit',
  }
}

async function send(path: string, options: CallOptions): Promise<Response> {
  const credential = credentialOf(options)
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...options.headers,
    ...credential.headers,
  }
  let body: string | undefined
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json'
    body = JSON.stringify(options.body)
  }
  let response: Response
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body,
      credentials: credential.credentials,
      cache: 'no-store',
    })
  } catch {
    throw new ApiError(0, 'NETWORK', 'roster could not be reached. Is it still running?', null)
  }
  if (response.ok || response.status === 304) return response
  const error = await errorOf(response)
  if (response.status === 401 && options.key === undefined && options.withCookie !== true) {
    session.forget()
    for (const listener of signedOutListeners) listener()
  }
  throw error
}

async function errorOf(response: Response): Promise<ApiError> {
  const requestId = response.headers.get('x-request-id')
  const envelope = parseJson(await response.text()) as {
    error?: { code?: unknown; message?: unknown; details?: unknown }
    request_id?: unknown
  } | null
  const code = typeof envelope?.error?.code === 'string' ? envelope.error.code : 'HTTP_ERROR'
  const message =
    typeof envelope?.error?.message === 'string'
      ? envelope.error.message
      : `roster answered ${response.status}`
  const id = typeof envelope?.request_id === 'string' ? envelope.request_id : requestId
  const details = Array.isArray(envelope?.error?.details)
    ? (envelope.error.details as unknown[]).filter(isProblem)
    : []
  return new ApiError(response.status, code, message, id, details)
}

function isProblem(value: unknown): value is FieldProblem {
  const item = value as { field?: unknown; message?: unknown } | null
  return typeof item?.field === 'string' && typeof item.message === 'string'
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** The filename of a Content-Disposition header (filename* first, as RFC 6266 says). */
export function suggestedName(header: string | null): string | null {
  if (header === null) return null
  const extended = /filename\*=UTF-8''([^;]+)/i.exec(header)
  if (extended?.[1] !== undefined) {
    try {
      return decodeURIComponent(extended[1])
    } catch {
      // Fall through to the plain parameter.
    }
  }
  const plain = /filename="([^"]*)"/i.exec(header)
  return plain?.[1] ?? null
}

/** Hands a Blob to the browser as a download under `filename`. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = filename
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}
