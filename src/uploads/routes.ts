import { Elysia } from 'elysia'
import { challengeFor } from '../auth/authenticator'
import { authPlugin } from '../auth/plugin'
import {
  ANY_CREDENTIAL_SECURITY as ANY_CREDENTIAL,
  ANY_SCHEME,
  type Principal,
  principalOf,
} from '../auth/principal'
import type { Deps } from '../deps'
import { fieldDetail } from '../errors/details'
import { AppError, notFound, unsupportedMediaType, validationFailed } from '../errors/errors'
import { noneMatch } from '../http/conditional'
import { documented, errorResponses, OFFSET_PAGE_PARAMETERS } from '../http/openapi-schemas'
import { offsetPageAnswer } from '../http/pagination'
import { QueryReader } from '../http/query'
import { countedBody, type IncomingUpload, receiveMultipart } from './multipart'
import {
  cleanContentType,
  cleanFilename,
  contentDisposition,
  filenameFromDisposition,
  ID_FORMAT,
  newId,
  servedInline,
} from './names'
import { chooseRange } from './ranges'
import { DeletedUpload, UploadPage, UploadView } from './schema'
import type { Owner, StoredFile, UploadRecord } from './service'

const tags = ['uploads']
const MAX_DESCRIPTION = 1000
const KNOWN_FIELDS = new Set(['description', 'public'])

/** POST /upload, GET and DELETE /uploads/{id}, GET and HEAD /files/{id}, under one prefix. */
export function uploadRoutes(deps: Deps, prefix: '' | '/v1' | '/v2') {
  const { uploads, uploadStorage: storage, config } = deps
  const limits = {
    maxFileSize: config.maxFileSize,
    maxFiles: config.maxFiles,
    maxUploadSize: config.maxUploadSize,
  }
  const uploadNeedsCredential = config.usersAccess === 'protected'
  const view = (upload: UploadRecord) => uploadView(upload, prefix)

  return new Elysia({ prefix })
    .use(authPlugin(deps))
    .post(
      '/upload',
      async ({ request, set }) => {
        const type = cleanContentType(request.headers.get('content-type'))
        let incoming: IncomingUpload
        if (type === 'multipart/form-data')
          incoming = await receiveMultipart(request, storage, limits)
        else if (type === 'application/octet-stream') incoming = await receiveRaw(request, deps)
        else
          throw unsupportedMediaType(
            'Send the upload as multipart/form-data or application/octet-stream',
          )
        let meta: { description: string | null; isPublic: boolean }
        try {
          meta = uploadFields(incoming.fields)
        } catch (error) {
          storage.discard(incoming.files.map((file) => file.tempPath))
          throw error
        }
        const upload = await uploads.create({
          id: newId('upl_'),
          ...meta,
          owner: ownerOf(principalOf(set)),
          files: incoming.files,
        })
        deps.metrics.uploadStored(upload.files)
        set.status = 201
        set.headers.location = `${prefix}/uploads/${upload.id}`
        return view(upload)
      },
      {
        parse: 'none',
        auth: { schemes: ANY_SCHEME, optional: !uploadNeedsCredential },
        detail: {
          tags,
          summary: 'Upload files',
          description:
            'multipart/form-data: one or more file parts with distinct names, optional description (at most 1000 characters) and public (true/false). Or application/octet-stream: the body is one file, named by Content-Disposition or ?filename=, with description and public in the query. Streams to disk; credentials sent with it make that user or key the owner.',
          security: ANY_CREDENTIAL,
          requestBody: {
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  properties: {
                    file: { type: 'string', format: 'binary' },
                    description: { type: 'string', maxLength: MAX_DESCRIPTION },
                    public: { type: 'string', enum: ['true', 'false'] },
                  },
                },
              },
              'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
            },
          },
          responses: documented({
            201: UploadView,
            ...errorResponses(
              'BAD_REQUEST',
              'UNAUTHORIZED',
              'FORBIDDEN',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'VALIDATION_ERROR',
              'INSUFFICIENT_STORAGE',
            ),
          }),
        },
      },
    )
    .get(
      '/uploads',
      ({ request, set }) => {
        const page = offsetPageAnswer(request, set, {
          path: `${prefix}/uploads`,
          publicUrl: config.publicUrl,
          list: (request) => uploads.list(request),
        })
        return { data: page.data.map(view), pagination: page.pagination }
      },
      {
        auth: { schemes: ['apiKey'] },
        detail: {
          tags,
          summary: 'List uploads (API key)',
          description:
            'Every upload with its files, newest first, paginated like /users (limit, offset, X-Total-Count, Link). Private ones included: an API key may read them all.',
          security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
          parameters: OFFSET_PAGE_PARAMETERS,
          responses: documented({
            200: UploadPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .get(
      '/uploads/:id',
      ({ params, set }) => {
        const upload = ID_FORMAT.test(params.id) ? uploads.get(params.id) : null
        if (upload === null) throw notFound('No upload with this id')
        requireReader(upload, principalOf(set))
        return view(upload)
      },
      {
        auth: { schemes: ANY_SCHEME, optional: true },
        detail: {
          tags,
          summary: 'An upload’s metadata',
          description:
            'Private uploads need the owner’s credential or an API key: with none, 401; with someone else’s, 404.',
          security: ANY_CREDENTIAL,
          responses: documented({
            200: UploadView,
            ...errorResponses('UNAUTHORIZED', 'NOT_FOUND'),
          }),
        },
      },
    )
    .delete(
      '/uploads/:id',
      async ({ params, set }) => {
        const upload = ID_FORMAT.test(params.id) ? uploads.get(params.id) : null
        if (upload === null) throw notFound('No upload with this id')
        requireDeleter(upload, principalOf(set))
        await uploads.remove(upload.id)
        return { id: upload.id, deleted: true as const }
      },
      {
        auth: { schemes: ANY_SCHEME, optional: true },
        detail: {
          tags,
          summary: 'Delete an upload and its files',
          description:
            'Needs the owner’s credential or an API key; another user’s credential is 403 on a public upload and 404 on a private one.',
          security: ANY_CREDENTIAL,
          responses: documented({
            200: DeletedUpload,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .get('/files/:id', ({ params, request, set }) => download(params.id, request, set, false), {
      auth: { schemes: ANY_SCHEME, optional: true },
      detail: {
        tags,
        summary: 'Download a file',
        description:
          'Range (one range; 206, or 416 when it starts past the end) and ETag (the SHA-256; If-None-Match gives 304). A Range with whitespace or several ranges is declined (200, the whole file). Served with X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy; only passive types (images other than SVG, text/plain, PDF, audio, video) inline, everything else as an attachment.',
        security: ANY_CREDENTIAL,
        responses: {
          200: {
            description: 'The file',
            content: {
              'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
            },
          },
          206: { description: 'Part of the file (Content-Range)' },
          304: { description: 'Not modified' },
          416: { description: 'Range not satisfiable (Content-Range: bytes */size), no body' },
          ...documented(errorResponses('UNAUTHORIZED', 'NOT_FOUND')),
        },
      },
    })
    .head('/files/:id', ({ params, request, set }) => download(params.id, request, set, true), {
      auth: { schemes: ANY_SCHEME, optional: true },
      detail: { hide: true },
    })

  function download(
    id: string,
    request: Request,
    set: { headers: Record<string, unknown> },
    headOnly: boolean,
  ): Response {
    const file = ID_FORMAT.test(id) ? uploads.file(id) : null
    if (file === null) throw notFound('No file with this id')
    requireReader({ isPublic: file.isPublic, owner: file.owner }, principalOf(set))
    return fileResponse(file, storage.pathOf(file.id), request, headOnly)
  }
}

/** The raw body as one file: named by Content-Disposition or ?filename=, typed by its name. */
async function receiveRaw(request: Request, deps: Deps): Promise<IncomingUpload> {
  const query = new QueryReader(request.url)
  const fields = new Map<string, string>()
  for (const name of KNOWN_FIELDS) {
    const value = query.string(name)
    if (value !== undefined) fields.set(name, value)
  }
  const named =
    filenameFromDisposition(request.headers.get('content-disposition')) ?? query.string('filename')
  query.assertValid()
  const filename = cleanFilename(named)
  const { maxFileSize, maxUploadSize } = deps.config
  const received = await deps.uploadStorage.receive(countedBody(request, maxUploadSize), {
    maxFileSize,
    budget: { remaining: maxUploadSize },
  })
  // Typed by the name's extension (Bun's table), since the body says only octet-stream.
  const guessed = named === null || named === undefined ? '' : Bun.file(filename).type
  return {
    files: [{ ...received, field: 'file', filename, contentType: cleanContentType(guessed) }],
    fields,
  }
}

/** description (at most 1000 characters) and public (true/false in any case, default false). */
function uploadFields(fields: Map<string, string>): {
  description: string | null
  isPublic: boolean
} {
  const problems = []
  for (const name of fields.keys()) {
    if (!KNOWN_FIELDS.has(name))
      problems.push(fieldDetail(name, 'is not a known field', fields.get(name)))
  }
  const description = fields.get('description') ?? null
  if (
    description !== null &&
    ([...description].length > MAX_DESCRIPTION || !description.isWellFormed())
  ) {
    problems.push(
      fieldDetail('description', `must be at most ${MAX_DESCRIPTION} characters`, description),
    )
  }
  const publicText = fields.get('public')
  const isPublic = publicText === undefined ? false : publicText.toLowerCase() === 'true'
  if (publicText !== undefined && !['true', 'false'].includes(publicText.toLowerCase())) {
    problems.push(fieldDetail('public', 'must be true or false', publicText))
  }
  if (problems.length > 0) throw validationFailed(problems)
  return { description, isPublic }
}

function ownerOf(principal: Principal | null): Owner {
  if (principal === null) return { userId: null, keyId: null }
  return principal.kind === 'user'
    ? { userId: principal.userId, keyId: null }
    : { userId: null, keyId: principal.keyId }
}

function isOwnerOrKey(owner: Owner, principal: Principal | null): boolean {
  if (principal === null) return false
  if (principal.kind === 'apiKey') return true
  return owner.userId !== null && owner.userId === principal.userId
}

/** Public: anyone. Private: the owner or an API key; nobody else learns that it exists. */
function requireReader(
  upload: { isPublic: boolean; owner: Owner },
  principal: Principal | null,
): void {
  if (upload.isPublic || isOwnerOrKey(upload.owner, principal)) return
  if (principal === null) throw credentialsNeeded()
  throw notFound('No such upload or file')
}

function requireDeleter(upload: UploadRecord, principal: Principal | null): void {
  if (isOwnerOrKey(upload.owner, principal)) return
  if (principal === null) throw credentialsNeeded()
  if (upload.isPublic)
    throw new AppError('FORBIDDEN', 'Only the owner or an API key may delete this upload')
  throw notFound('No upload with this id')
}

function credentialsNeeded(): AppError {
  return new AppError(
    'UNAUTHORIZED',
    'This upload is private; send the owner’s credential or an API key',
    [],
    {
      'www-authenticate': challengeFor(ANY_SCHEME),
    },
  )
}

function uploadView(upload: UploadRecord, prefix: string) {
  return {
    id: upload.id,
    description: upload.description,
    public: upload.isPublic,
    created_at: upload.createdAt,
    files: upload.files.map((file) => ({
      id: file.id,
      field: file.field,
      filename: file.filename,
      content_type: file.contentType,
      size: file.size,
      sha256: file.sha256,
      url: `${prefix}/files/${file.id}`,
    })),
  }
}

/**
 * The file (or one range of it) straight from disk. Every download is nosniff and sandboxed by
 * CSP; only passive types (servedInline) are inline, everything else is an attachment.
 */
function fileResponse(
  file: StoredFile,
  path: string,
  request: Request,
  headOnly: boolean,
): Response {
  const etag = `"${file.sha256}"`
  const headers: Record<string, string> = {
    'content-type': file.contentType,
    etag,
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': contentDisposition(
      servedInline(file.contentType) ? 'inline' : 'attachment',
      file.filename,
    ),
    'cache-control': file.isPublic ? 'public, no-cache' : 'private, no-cache',
  }
  if (!noneMatch(request.headers.get('if-none-match'), etag)) {
    return new Response(null, { status: 304, headers })
  }
  const ifRange = request.headers.get('if-range')
  const rangeHeader = request.headers.get('range')
  const range = chooseRange(rangeHeader, file.size, ifRange === null || ifRange === etag)
  const body = Bun.file(path)
  if (range.kind === 'unsatisfiable') {
    return new Response(null, {
      status: 416,
      headers: { ...headers, 'content-range': `bytes */${file.size}` },
    })
  }
  if (range.kind === 'partial') {
    const length = range.end - range.start + 1
    headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`
    headers['content-length'] = String(length)
    return new Response(headOnly ? null : body.slice(range.start, range.end + 1), {
      status: 206,
      headers,
    })
  }
  headers['content-length'] = String(file.size)
  if (headOnly) return new Response(null, { status: 200, headers })
  // Bun applies a Range header itself to a file body answered 200 (its parser accepts what
  // RFC 9110 does not, such as `bytes = 0-5`). A range roster declined is declined: the file
  // then goes out as a plain stream, which Bun leaves alone. Without a Range header it goes
  // out as the file (sendfile).
  const whole = rangeHeader === null ? body : body.stream().pipeThrough(new TransformStream())
  return new Response(whole, { status: 200, headers })
}
