import type busboy from 'busboy'
import { fieldDetail } from '../../errors/details'
import {
  AppError,
  badRequest,
  type ErrorDetail,
  payloadTooLarge,
  validationFailed,
} from '../../errors/errors'
import { storageError } from '../../storage/file-store'
import type { UploadForm, UploadPart } from '../../uploads/service'

/** An upload form read from a request body. */
export interface RequestForm extends UploadForm {
  /** The first thing that went wrong with the body itself (a limit, a malformed or cut body). */
  readonly failure: unknown
  /** Stops reading the body (the upload failed). */
  close(): void
}

export interface MultipartLimits {
  maxFiles: number
  maxUploadSize: number
}

/** Room for the form's text fields and part headers on top of the files' own bytes. */
const FORM_OVERHEAD = 1024 * 1024
const MAX_FIELD_BYTES = 8 * 1024

/**
 * A multipart/form-data body as an upload form, parsed as it streams with busboy: file parts
 * come one at a time (the next once this one is read), text fields are kept (they are small).
 * A missing boundary is a VALIDATION_ERROR, repeated or overlong fields are problems of the
 * form, limits 413, a malformed or cut body 400.
 */
export async function multipartForm(
  request: Request,
  limits: MultipartLimits,
): Promise<RequestForm> {
  const { Readable, busboy } = await streamParts()
  const contentType = request.headers.get('content-type') ?? ''
  let parser: busboy.Busboy
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      defParamCharset: 'utf8',
      limits: {
        files: limits.maxFiles,
        fieldSize: MAX_FIELD_BYTES,
        fields: 16,
        parts: limits.maxFiles + 16,
        headerPairs: 32,
      },
    })
  } catch {
    throw validationFailed([
      fieldDetail('content-type', 'must be multipart/form-data with a boundary', contentType),
    ])
  }
  const body = countedBody(request, limits.maxUploadSize + FORM_OVERHEAD)

  const fields = new Map<string, string>()
  const problems: ErrorDetail[] = []
  const waiting: UploadPart[] = []
  let ended = false
  let failure: unknown = null
  let wake: (() => void) | null = null
  const notify = () => {
    wake?.()
    wake = null
  }
  // The first limit (413) wins over what it causes downstream (busboy and the file streams
  // fail too once the body is cut off).
  const fail = (error: unknown) => {
    if (failure === null || (!(failure instanceof AppError) && error instanceof AppError)) {
      failure = error
    }
    notify()
  }

  parser.on('file', (field, stream, info) => {
    // Failures reach the reader through the parser; without a listener, an error the stream
    // emits once nobody reads it would be thrown as uncaught.
    stream.on('error', () => {})
    waiting.push({ field, filename: info.filename, contentType: info.mimeType, chunks: stream })
    notify()
  })
  parser.on('field', (name, value, info) => {
    if (fields.has(name)) problems.push(fieldDetail(name, 'is given more than once'))
    else if (info.valueTruncated) problems.push(fieldDetail(name, 'is too long', value))
    else fields.set(name, value)
  })
  parser.on('filesLimit', () =>
    fail(payloadTooLarge(`An upload may hold at most ${limits.maxFiles} files`)),
  )
  parser.on('partsLimit', () => fail(payloadTooLarge('The form has too many parts')))
  parser.on('fieldsLimit', () => fail(payloadTooLarge('The form has too many fields')))
  parser.on('error', (error: unknown) =>
    fail(
      error instanceof AppError || (error as { name?: string }).name === 'AbortError'
        ? error
        : badRequest('The multipart body is malformed or was cut short'),
    ),
  )
  parser.on('close', () => {
    ended = true
    notify()
  })

  const source = Readable.fromWeb(body as never)
  source.on('error', (error) => parser.destroy(error))
  source.pipe(parser)

  async function* parts(): AsyncGenerator<UploadPart> {
    for (;;) {
      if (failure !== null) throw failure
      const next = waiting.shift()
      if (next !== undefined) yield next
      else if (ended) return
      else await new Promise<void>((resolve) => (wake = resolve))
    }
  }

  return {
    parts: parts(),
    fields,
    problems,
    get failure() {
      return failure
    },
    close: () => source.destroy(),
  }
}

/** The parser's modules once the first multipart upload has loaded them. */
let loaded: Promise<{
  Readable: typeof import('node:stream').Readable
  busboy: typeof import('busboy')
}> | null = null

/**
 * busboy and node:stream, loaded by the first multipart upload rather than at start: node:stream
 * alone adds about 7 ms to every start of the binary (bench/README, issue 27).
 */
function streamParts() {
  loaded ??= Promise.all([import('node:stream'), import('busboy')]).then(
    ([{ Readable }, { default: busboy }]) => ({ Readable, busboy }),
  )
  return loaded
}

/**
 * The request body, refused with 413 once it passes `limit` bytes (the files, their part
 * headers and the text fields together), or at once when Content-Length says it will.
 */
export function countedBody(request: Request, limit: number): ReadableStream<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) throw payloadTooLarge('The upload is over its size limit')
  if (request.body === null) return new ReadableStream({ start: (c) => c.close() })
  let seen = 0
  return request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength
        if (seen > limit) controller.error(payloadTooLarge('The upload is over its size limit'))
        else controller.enqueue(chunk)
      },
    }),
  )
}

/**
 * What a failed upload answers: the body's own failure first (a cut body fails the file being
 * read too); our errors as they are; a client gone mid-body as 400 (nobody will read it);
 * storage errors mapped.
 */
export function uploadFailure(form: RequestForm | null, error: unknown): unknown {
  const first = form?.failure instanceof AppError ? form.failure : error
  if (first instanceof AppError) return first
  const cause = form?.failure ?? first
  if ((cause as { name?: string }).name === 'AbortError') {
    return badRequest('The upload was cut short')
  }
  return storageError(cause)
}
