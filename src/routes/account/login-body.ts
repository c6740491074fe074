import { fieldDetail } from '../../errors/details'
import { badRequest, unsupportedMediaType, validationFailed } from '../../errors/errors'
import {
  mediaTypeOf,
  parseJsonObject,
  prototypeKeyRefused,
  readText,
  requireUtf8Charset,
} from '../../http/json-body'
import { isPrototypeKey } from '../../own-keys'

/** Sign-in bodies are small; anything bigger is refused before it is read. */
const MAX_LOGIN_BYTES = 16 * 1024

const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'
const MULTIPART = 'multipart/form-data'

/**
 * Parser for /login: a URL-encoded form (what the seed interface's clients send), JSON, or a
 * multipart form, all into one flat object of strings. 415 for other media types, 413 over
 * 16 KiB, 400 for a body that cannot be read, 422 for fields given twice or sent as files.
 */
export function loginBody() {
  // The media types after our parser only document the body (see jsonBody); ours always answers.
  const parsers: [typeof parseLoginBody, typeof FORM, typeof JSON_TYPE, typeof MULTIPART] = [
    parseLoginBody,
    FORM,
    JSON_TYPE,
    MULTIPART,
  ]
  return parsers

  async function parseLoginBody({
    request,
    contentType,
  }: {
    request: Request
    contentType: string
  }): Promise<Record<string, unknown>> {
    const type = mediaTypeOf(request, contentType)
    if (type !== FORM && type !== JSON_TYPE && type !== MULTIPART) {
      throw unsupportedMediaType(`Send the credentials as ${FORM}, ${JSON_TYPE} or ${MULTIPART}`)
    }
    if (type === JSON_TYPE) requireUtf8Charset(request.headers.get('content-type'))
    const text = await readText(request, MAX_LOGIN_BYTES)
    if (text.trim() === '') throw badRequest('The request body is empty; send the credentials')
    if (type === JSON_TYPE) return parseJsonObject(text)
    if (type === FORM) return flatten(new URLSearchParams(text))
    return flatten(await parseMultipart(text, request.headers.get('content-type') ?? ''))
  }
}

async function parseMultipart(text: string, contentType: string): Promise<FormData> {
  try {
    return await new Response(text, { headers: { 'content-type': contentType } }).formData()
  } catch {
    throw badRequest('The multipart body could not be read')
  }
}

/**
 * One value per field; a field given twice or as a file is refused, and so is one named
 * `__proto__`, `constructor` or `prototype` (section 17, as a JSON body's keys are).
 */
function flatten(entries: URLSearchParams | FormData): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null)
  const problems = []
  const seen = new Set<string>()
  for (const [key, value] of entries) {
    if (isPrototypeKey(key)) throw prototypeKeyRefused(key)
    if (seen.has(key)) problems.push(fieldDetail(key, 'must be given once'))
    else if (typeof value !== 'string') problems.push(fieldDetail(key, 'must be a text field'))
    seen.add(key)
    out[key] = value
  }
  if (problems.length > 0) throw validationFailed(problems)
  return out
}
