import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { ID_FORMAT } from '../../db/random-id'
import { notFound, unsupportedMediaType } from '../../errors/errors'
import { chronologicalListParameters, documented, errorResponses } from '../../http/openapi-schemas'
import { offsetPageAnswer } from '../../http/pagination'
import { ownerOf, requireDeleter, requireReader } from '../../uploads/access'
import { MAX_DESCRIPTION } from '../../uploads/fields'
import { cleanContentType } from '../../uploads/names'
import type { FileRecord, UploadRecord, UploadService } from '../../uploads/service'
import type { AuthPlugin } from '../auth/plugin'
import { auditSourceOf, principalOf } from '../auth/principal'
import { guardOf } from '../authorisation'
import { fileResponse } from './download'
import { multipartForm, type RequestForm, uploadFailure } from './multipart'
import { rawForm } from './raw-body'
import { DeletedUpload, UploadPage, UploadView } from './schema'

const tags = ['uploads']

/** What the upload routes are given by the composition root. */
export interface UploadRouteInputs {
  auth: AuthPlugin
  uploads: UploadService
  /** Counts stored files for the metrics. */
  uploadStored: (files: readonly FileRecord[]) => void
  config: Pick<Config, 'maxFiles' | 'maxUploadSize' | 'publicUrl' | 'usersAccess'>
}

/** POST /upload, GET and DELETE /uploads/{id}, GET and HEAD /files/{id}, under one prefix. */
export function uploadRoutes(inputs: UploadRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, uploads, uploadStored, config } = inputs
  const uploadGuard = guardOf('POST /upload', config.usersAccess)
  const listGuard = guardOf('GET /uploads', config.usersAccess)
  const getGuard = guardOf('GET /uploads/:id', config.usersAccess)
  const deleteGuard = guardOf('DELETE /uploads/:id', config.usersAccess)
  const fileGuard = guardOf('GET /files/:id', config.usersAccess)
  const headGuard = guardOf('HEAD /files/:id', config.usersAccess)
  const view = (upload: UploadRecord) => uploadView(upload, prefix)

  /** The upload form the body holds, by its type; a body that is not 415. */
  async function formOf(request: Request): Promise<RequestForm> {
    const type = cleanContentType(request.headers.get('content-type'))
    if (type === 'multipart/form-data') return multipartForm(request, config)
    if (type === 'application/octet-stream') return rawForm(request, config)
    throw unsupportedMediaType('Send the upload as multipart/form-data or application/octet-stream')
  }

  return new Elysia({ prefix })
    .use(auth)
    .post(
      '/upload',
      async ({ request, set }) => {
        const form = await formOf(request)
        let upload: UploadRecord
        try {
          upload = await uploads.accept(form, ownerOf(principalOf(set)), auditSourceOf(set))
        } catch (error) {
          form.close()
          throw uploadFailure(form, error)
        }
        uploadStored(upload.files)
        set.status = 201
        set.headers.location = `${prefix}/uploads/${upload.id}`
        return view(upload)
      },
      {
        parse: 'none',
        ...uploadGuard.hook,
        detail: {
          tags,
          summary: 'Upload files',
          description:
            'multipart/form-data: one or more file parts with distinct names, optional description (at most 1000 characters) and public (true/false). Or application/octet-stream: the body is one file, named by Content-Disposition or ?filename=, with description and public in the query. Streams to disk; credentials sent with it make that user or key the owner.',
          security: uploadGuard.security,
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
      async ({ request, set }) => {
        const page = await offsetPageAnswer(request, set, {
          path: `${prefix}/uploads`,
          publicUrl: config.publicUrl,
          usually: 'newest',
          list: (request) => uploads.list(request),
        })
        return { data: page.data.map(view), pagination: page.pagination }
      },
      {
        ...listGuard.hook,
        detail: {
          tags,
          summary: 'List uploads (API key)',
          description:
            'Every upload with its files, newest first (sort=created: oldest first), paginated like /users (limit, offset, X-Total-Count, Link). Private ones included: an API key may read them all.',
          security: listGuard.security,
          parameters: chronologicalListParameters('newest'),
          responses: documented({
            200: UploadPage,
            ...errorResponses('BAD_REQUEST', 'UNAUTHORIZED', 'VALIDATION_ERROR'),
          }),
        },
      },
    )
    .get(
      '/uploads/:id',
      async ({ params, set }) => {
        const upload = ID_FORMAT.test(params.id) ? await uploads.get(params.id) : null
        if (upload === null) throw notFound('No upload with this id')
        requireReader(upload, principalOf(set))
        return view(upload)
      },
      {
        ...getGuard.hook,
        detail: {
          tags,
          summary: 'An upload’s metadata',
          description:
            'Private uploads need the owner’s credential or an API key: with none, 401; with someone else’s, 404.',
          security: getGuard.security,
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
        const upload = ID_FORMAT.test(params.id) ? await uploads.get(params.id) : null
        if (upload === null) throw notFound('No upload with this id')
        requireDeleter(upload, principalOf(set))
        await uploads.remove(upload.id, auditSourceOf(set))
        return { id: upload.id, deleted: true as const }
      },
      {
        ...deleteGuard.hook,
        detail: {
          tags,
          summary: 'Delete an upload and its files',
          description:
            'Needs the owner’s credential or an API key; another user’s credential is 403 on a public upload and 404 on a private one.',
          security: deleteGuard.security,
          responses: documented({
            200: DeletedUpload,
            ...errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND'),
          }),
        },
      },
    )
    .get('/files/:id', ({ params, request, set }) => download(params.id, request, set, false), {
      ...fileGuard.hook,
      detail: {
        tags,
        summary: 'Download a file',
        description:
          'Range (one range; 206, or 416 when it starts past the end) and ETag (the SHA-256; If-None-Match gives 304). A Range with whitespace or several ranges is declined (200, the whole file). Served with X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy; only passive types (images other than SVG, text/plain, PDF, audio, video) inline, everything else as an attachment.',
        security: fileGuard.security,
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
      ...headGuard.hook,
      detail: { hide: true },
    })

  async function download(
    id: string,
    request: Request,
    set: { headers: Record<string, unknown> },
    headOnly: boolean,
  ): Promise<Response> {
    const file = ID_FORMAT.test(id) ? await uploads.file(id) : null
    if (file === null) throw notFound('No file with this id')
    requireReader({ isPublic: file.isPublic, owner: file.owner }, principalOf(set))
    return await fileResponse(file, uploads, request, headOnly)
  }
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
