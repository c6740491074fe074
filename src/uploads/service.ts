import type { Store } from '../db/client'
import { newId } from '../db/random-id'
import type { FileStore } from '../storage/file-store'
import { uploadFields } from './fields'
import type { IncomingFile, IncomingUpload } from './multipart'

export interface Owner {
  userId: number | null
  keyId: number | null
}

export interface UploadRecord {
  id: string
  description: string | null
  isPublic: boolean
  owner: Owner
  createdAt: string
  files: FileRecord[]
}

export interface FileRecord {
  id: string
  field: string
  filename: string
  contentType: string
  size: number
  sha256: string
}

export interface StoredFile extends FileRecord {
  uploadId: string
  isPublic: boolean
  owner: Owner
}

interface UploadRow {
  id: string
  description: string | null
  public: number
  owner_user_id: number | null
  owner_key_id: number | null
  created_at: string
}

interface FileRow {
  id: string
  upload_id: string
  field: string
  filename: string
  content_type: string
  size: number
  sha256: string
}

export type UploadService = ReturnType<typeof createUploadService>

/**
 * Uploads over the database and the file store. Creating one inserts its rows and renames its
 * files into place in one transaction: a file is in place before its row commits, so no row
 * ever points at a missing file, and a file whose row did not commit (a crash in between) is
 * deleted by the sweep at start.
 */
export function createUploadService(store: Store, files: FileStore, now: () => Date) {
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
  const fileById = reader.query<FileRow & Omit<UploadRow, 'id'>, [string]>(
    'SELECT f.*, u.description, u.public, u.owner_user_id, u.owner_key_id, u.created_at FROM files f, uploads u WHERE f.id = ? AND u.id = f.upload_id',
  )
  const fileExists = sqlite.query<{ found: number }, [string]>(
    'SELECT 1 AS found FROM files WHERE id = ?',
  )
  const deleteUpload = sqlite.query('DELETE FROM uploads WHERE id = ?')
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM uploads')
  // Newest first: created_at, then the order of insertion within one millisecond.
  const newest = reader.query<UploadRow, [number, number]>(
    'SELECT * FROM uploads ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?',
  )
  const readPage = reader.transaction((page: { limit: number; offset: number }) => ({
    data: newest.all(page.limit, page.offset).map((row) => toRecord(row, filesOf.all(row.id))),
    total: total.get()?.n ?? 0,
  }))

  const toRecord = (row: UploadRow, files: FileRow[]): UploadRecord => ({
    id: row.id,
    description: row.description,
    isPublic: row.public === 1,
    owner: { userId: row.owner_user_id, keyId: row.owner_key_id },
    createdAt: row.created_at,
    files: files.map(toFile),
  })

  const service = {
    /**
     * Takes a received upload: checks its text fields, then registers it and places its files,
     * or (any failure) discards them: nothing of a refused upload is kept.
     */
    async accept(incoming: IncomingUpload, owner: Owner): Promise<UploadRecord> {
      let meta: ReturnType<typeof uploadFields>
      try {
        meta = uploadFields(incoming.fields)
      } catch (error) {
        files.discard(incoming.files.map((file) => file.fileId))
        throw error
      }
      return await service.create({ id: newId('upl_'), ...meta, owner, files: incoming.files })
    },

    /**
     * Registers an upload and places its files; settles once the rows are durable. On any
     * failure, the savepoint's or the group commit's, deletes the files and registers nothing.
     */
    async create(input: {
      id: string
      description: string | null
      isPublic: boolean
      owner: Owner
      files: readonly IncomingFile[]
    }): Promise<UploadRecord> {
      const createdAt = now().toISOString()
      try {
        await writes.run(() => {
          insertUpload.run(
            input.id,
            input.description,
            input.isPublic ? 1 : 0,
            input.owner.userId,
            input.owner.keyId,
            createdAt,
          )
          input.files.forEach((file, position) => {
            insertFile.run(
              file.fileId,
              input.id,
              file.field,
              file.filename,
              file.contentType,
              file.size,
              file.sha256,
              position,
            )
          })
          files.place(input.files.map((file) => file.fileId))
        })
      } catch (error) {
        files.discard(input.files.map((file) => file.fileId))
        throw error
      }
      const row = uploadById.get(input.id) as UploadRow
      return toRecord(row, filesOf.all(input.id))
    },

    get(id: string): UploadRecord | null {
      const row = uploadById.get(id)
      return row === null ? null : toRecord(row, filesOf.all(id))
    },

    file(id: string): StoredFile | null {
      const row = fileById.get(id)
      if (row === null) return null
      return {
        ...toFile(row),
        uploadId: row.upload_id,
        isPublic: row.public === 1,
        owner: { userId: row.owner_user_id, keyId: row.owner_key_id },
      }
    },

    /**
     * Deletes the upload's rows and, once that has committed, its files (a file left by a
     * failed unlink or a crash in between is swept at start).
     */
    async remove(id: string): Promise<boolean> {
      const stored = filesOf.all(id)
      const removed = await writes.run(() => deleteUpload.run(id).changes > 0)
      if (removed) files.discard(stored.map((file) => file.id))
      return removed
    },

    count(): number {
      return total.get()?.n ?? 0
    },

    /** A page of every upload with its files, newest first (for GET /uploads). */
    list(page: { limit: number; offset: number }): { data: UploadRecord[]; total: number } {
      return readPage(page)
    },

    /** Start-up clean-up of what a crash can leave behind. */
    sweep(): number {
      return files.sweep((fileId) => fileExists.get(fileId) !== null)
    },
  }
  return service
}

function toFile(row: FileRow): FileRecord {
  return {
    id: row.id,
    field: row.field,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    sha256: row.sha256,
  }
}
