import type { PageRequest } from '../db/page'
import type { IncomingFile } from './multipart'

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

/** An upload to register: its files are received and waiting to be placed. */
export interface NewUpload {
  id: string
  description: string | null
  isPublic: boolean
  owner: Owner
  files: readonly IncomingFile[]
}

/**
 * The uploads' rows (the files' bytes are the file store's). Written for a database without a
 * single writer: every write is one statement or one transaction, and nothing is read first.
 */
export interface UploadRecords {
  /**
   * Registers an upload and its files in one transaction; `place` runs inside it, before the
   * commit, so a file is in place before any row points at it. Settles once the rows are
   * durable; rejects (and registers nothing) when `place` or the commit fails.
   */
  insert(upload: NewUpload, place: () => void): Promise<UploadRecord>
  get(id: string): Promise<UploadRecord | null>
  /** One file with what access to it depends on (its upload's visibility and owner). */
  file(id: string): Promise<StoredFile | null>
  /** Deletes an upload's rows; the ids of its files, or null when there was no such upload. */
  remove(id: string): Promise<string[] | null>
  count(): Promise<number>
  /** A page of every upload with its files, newest first. */
  list(page: PageRequest): Promise<{ data: UploadRecord[]; total: number }>
}

/** A files row as both databases store it. */
export interface FileRow {
  id: string
  upload_id: string
  field: string
  filename: string
  content_type: string
  size: number
  sha256: string
}

export function fileOfRow(row: FileRow): FileRecord {
  return {
    id: row.id,
    field: row.field,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    sha256: row.sha256,
  }
}
