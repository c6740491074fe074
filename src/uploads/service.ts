import { newId } from '../db/random-id'
import type { FileStore } from '../storage/file-store'
import { uploadFields } from './fields'
import type { IncomingUpload } from './multipart'
import type { NewUpload, Owner, UploadRecord, UploadRecords } from './records'

export type { FileRecord, Owner, StoredFile, UploadRecord } from './records'

export type UploadService = ReturnType<typeof createUploadService>

/**
 * Uploads: their rows and their files' bytes kept in step. Registering one places its files
 * inside the rows' transaction: a file is in place before its row commits, so no row ever
 * points at a missing file, and a file whose row did not commit (a crash in between) is
 * deleted by the sweep at start.
 */
export function createUploadService(records: UploadRecords, files: FileStore) {
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
        await files.discard(incoming.files.map((file) => file.fileId))
        throw error
      }
      return await service.create({ id: newId('upl_'), ...meta, owner, files: incoming.files })
    },

    /**
     * Registers an upload and places its files; settles once the rows are durable. On any
     * failure, the savepoint's or the group commit's, deletes the files and registers nothing.
     */
    async create(upload: NewUpload): Promise<UploadRecord> {
      const ids = upload.files.map((file) => file.fileId)
      let record: UploadRecord
      try {
        record = await records.insert(upload, () => files.place(ids))
      } catch (error) {
        await files.discard(ids)
        throw error
      }
      await files.committed(ids).catch(() => {})
      return record
    },

    get: (id: string) => records.get(id),
    file: (id: string) => records.file(id),
    count: () => records.count(),
    list: (page: { limit: number; offset: number }) => records.list(page),

    /**
     * Deletes the upload's rows and, once that has committed, its files (a file left by a
     * failed unlink or a crash in between is swept at start).
     */
    async remove(id: string): Promise<boolean> {
      const fileIds = await records.remove(id)
      if (fileIds === null) return false
      await files.discard(fileIds)
      return true
    },
  }
  return service
}
