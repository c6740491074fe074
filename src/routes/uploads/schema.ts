import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { offsetPageOf } from '../../http/openapi-schemas'

export const FileView = t.Object({
  id: t.String({ examples: ['fil_3XqvT0gkq2S1aVb8m8mWbA'] }),
  field: t.String({ description: 'The form part it came in (file for raw uploads).' }),
  filename: t.String({ description: 'The client’s filename, cleaned; metadata only.' }),
  content_type: t.String(),
  size: Type.Integer({ minimum: 0 }),
  sha256: t.String({ description: 'Hex SHA-256 of the bytes, computed while they streamed in.' }),
  url: t.String({ examples: ['/files/fil_3XqvT0gkq2S1aVb8m8mWbA'] }),
})

export const UploadView = t.Object({
  id: t.String({ examples: ['upl_Jf3kR0cQx1B9m2LwqZ7n4A'] }),
  description: t.Union([t.String(), t.Null()]),
  public: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
  files: t.Array(FileView),
})

export const UploadPage = offsetPageOf(UploadView)

export const DeletedUpload = t.Object({ id: t.String(), deleted: t.Literal(true) })
