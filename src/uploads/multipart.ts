import { Readable } from 'node:stream'
import busboy from 'busboy'
import { fieldDetail } from '../errors/details'
import { AppError, badRequest, payloadTooLarge, validationFailed } from '../errors/errors'
import { type Budget, type FileStore, type ReceivedFile, storageError } from '../storage/file-store'
import { DECEPTIVE_MESSAGE, hasDeceptiveCharacter } from '../text'
import { cleanContentType, cleanFilename } from './names'

export interface UploadLimits {
  maxFileSize: number
  maxFiles: number
  maxUploadSize: number
}

export interface IncomingFile extends ReceivedFile {
  /** Order in the form (files finish streaming in, and are kept, in this order). */
  position?: number
  field: string
  filename: string
  contentType: string
}

export interface IncomingUpload {
  files: IncomingFile[]
  /** Text fields, each given once (a repeated one is a VALIDATION_ERROR). */
  fields: Map<string, string>
}

/** Room for the form's text fields and part headers on top of the files' own bytes. */
const FORM_OVERHEAD = 1024 * 1024
const MAX_FIELD_BYTES = 8 * 1024

/**
 * Reads a multipart/form-data body as a stream with busboy: each file part goes straight to a
 * temporary file (never into memory), text fields are kept (they are small). Duplicate file
 * names and repeated fields are a VALIDATION_ERROR, a missing boundary or no file part 422,
 * limits 413, a malformed or cut body 400. On any failure every temporary file is deleted.
 */
export async function receiveMultipart(
  request: Request,
  storage: FileStore,
  limits: UploadLimits,
): Promise<IncomingUpload> {
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

  const budget: Budget = { remaining: limits.maxUploadSize }
  const files: IncomingFile[] = []
  const fields = new Map<string, string>()
  const problems: ReturnType<typeof fieldDetail>[] = []
  const receiving: Promise<void>[] = []
  const seenFiles = new Set<string>()
  let failure: unknown = null

  const done = new Promise<void>((resolve, reject) => {
    // The first limit (413) or storage error wins over what it causes downstream (busboy and the
    // file streams fail too once the body is cut off).
    const fail = (error: unknown) => {
      if (failure === null || (!(failure instanceof AppError) && error instanceof AppError)) {
        failure = error
      }
      reject(failure)
    }
    parser.on('file', (field, stream, info) => {
      // Failures reach us through the parser and the read loop; without a listener, an error
      // the stream emits after that loop has ended would be thrown as uncaught.
      stream.on('error', () => {})
      // A part whose Content-Disposition has no usable name (busboy gives undefined or "").
      if (typeof field !== 'string' || field === '') {
        problems.push(fieldDetail('file', 'every file part needs a name'))
        stream.resume()
        return
      }
      if (seenFiles.has(field)) {
        problems.push(fieldDetail(field, 'is given more than once; file parts need distinct names'))
        stream.resume()
        return
      }
      if (info.filename !== undefined && hasDeceptiveCharacter(info.filename)) {
        problems.push(fieldDetail(`${field}.filename`, DECEPTIVE_MESSAGE, info.filename))
        stream.resume()
        return
      }
      seenFiles.add(field)
      const position = seenFiles.size
      const file = storage
        .receive(stream, { maxFileSize: limits.maxFileSize, budget })
        .then((received) => {
          files.push({
            ...received,
            position,
            field,
            filename: cleanFilename(info.filename),
            contentType: cleanContentType(info.mimeType),
          })
        })
        .catch((error: unknown) => {
          stream.resume()
          fail(error)
        })
      receiving.push(file)
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
    parser.on('close', () => resolve())
  })

  const body = countedBody(request, limits.maxUploadSize + FORM_OVERHEAD)
  const source = Readable.fromWeb(body as never)
  source.on('error', (error) => parser.destroy(error))
  source.pipe(parser)

  try {
    await done
    await Promise.all(receiving)
    // A file's store may fail after the parser has read the whole body (a bucket that stops
    // answering): its error is recorded, not thrown, and must win over "no file part".
    if (failure !== null) throw failure
  } catch (error) {
    source.destroy()
    await Promise.allSettled(receiving)
    await storage.discard(files.map((file) => file.fileId))
    throw failureOf(failure ?? error)
  }
  files.sort((a, b) => (a.position ?? 0) - (b.position ?? 0))
  if (problems.length > 0 || files.length === 0) {
    await storage.discard(files.map((file) => file.fileId))
    if (files.length === 0 && problems.length === 0) {
      throw validationFailed([fieldDetail('file', 'is required: send at least one file part')])
    }
    throw validationFailed(problems)
  }
  return { files, fields }
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

/** Our errors as they are; a client gone mid-body as 400 (nobody will read it); storage errors mapped. */
function failureOf(error: unknown): unknown {
  if (error instanceof AppError) return error
  if ((error as { name?: string }).name === 'AbortError') {
    return badRequest('The upload was cut short')
  }
  return storageError(error)
}
