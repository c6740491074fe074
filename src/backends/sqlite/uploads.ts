import { bothWays, directionOf, type ListRequest } from '../../db/page'
import {
  type FileRow,
  type NewUpload,
  type StoredFile,
  storedFileOfRow,
  type UploadRecord,
  type UploadRecords,
  type UploadRecordWrites,
  type UploadRow,
  uploadOfRow,
} from '../../uploads/records'
import type { Store } from './connection'
import { settle } from './settle'

/** Upload and file rows in SQLite (see UploadRecords). */
export function createSqliteUploadRecords(
  store: Store,
  now: () => Date,
): UploadRecords & { readonly inUnit: UploadRecordWrites } {
  const sqlite = store.db.$client
  const { reader, writes } = store
  const insertUpload = sqlite.query(
    'INSERT INTO uploads (id, description, public, owner_user_id, owner_key_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertFile = sqlite.query(
    'INSERT INTO files (id, upload_id, field, filename, content_type, size, sha256, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const uploadById = reader.query<UploadRow, [string]>('SELECT * FROM uploads WHERE id = ?')
  const filesOf = reader.query<FileRow, [string]>(
    'SELECT * FROM files WHERE upload_id = ? ORDER BY position',
  )
  const fileIdsOf = sqlite.query<{ id: string }, [string]>(
    'SELECT id FROM files WHERE upload_id = ?',
  )
  const fileById = reader.query<FileRow & Omit<UploadRow, 'id'>, [string]>(
    'SELECT f.*, u.description, u.public, u.owner_user_id, u.owner_key_id, u.created_at FROM files f, uploads u WHERE f.id = ? AND u.id = f.upload_id',
  )
  const fileExists = sqlite.query<{ found: number }, [string]>(
    'SELECT 1 AS found FROM files WHERE id = ?',
  )
  const deleteUpload = sqlite.query('DELETE FROM uploads WHERE id = ?')
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM uploads')
  // Creation order: created_at, then the order of insertion within one millisecond.
  const inOrder = bothWays((direction) =>
    reader.query<UploadRow, [number, number]>(
      `SELECT * FROM uploads ORDER BY created_at ${direction}, rowid ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const readPage = store.snapshot((page: ListRequest) => ({
    data: inOrder[directionOf(page, 'newest')]
      .all(page.limit, page.offset)
      .map((row) => uploadOfRow(row, filesOf.all(row.id))),
    total: total.get()?.n ?? 0,
  }))
  const readUpload = (id: string): UploadRecord | null => {
    const row = uploadById.get(id)
    return row === null ? null : uploadOfRow(row, filesOf.all(id))
  }

  /** The writes, synchronous, for work already inside a group transaction (see WriteQueue). */
  const inWrite = {
    insert(upload: NewUpload, createdAt: string): void {
      insertUpload.run(
        upload.id,
        upload.description,
        upload.isPublic ? 1 : 0,
        upload.owner.userId,
        upload.owner.keyId,
        createdAt,
      )
      upload.files.forEach((file, position) => {
        insertFile.run(
          file.fileId,
          upload.id,
          file.field,
          file.filename,
          file.contentType,
          file.size,
          file.sha256,
          position,
        )
      })
    },
    remove(id: string): string[] | null {
      const ids = fileIdsOf.all(id).map((row) => row.id)
      return deleteUpload.run(id).changes > 0 ? ids : null
    },
  }

  return {
    inUnit: {
      insert: (upload, createdAt) => settle(() => inWrite.insert(upload, createdAt)),
      remove: (id) => settle(() => inWrite.remove(id)),
    },
    async insert(upload: NewUpload): Promise<UploadRecord> {
      await writes.run(() => inWrite.insert(upload, now().toISOString()))
      return readUpload(upload.id) as UploadRecord
    },

    get: (id) => settle(() => readUpload(id)),

    file: (id) =>
      settle((): StoredFile | null => {
        const row = fileById.get(id)
        if (row === null) return null
        return storedFileOfRow(row)
      }),

    remove: (id) => writes.run(() => inWrite.remove(id)),

    count: () => settle(() => total.get()?.n ?? 0),
    list: (page) => settle(() => readPage(page)),
    registered: (fileIds) =>
      settle(() => new Set(fileIds.filter((id) => fileExists.get(id) !== null))),
  }
}
