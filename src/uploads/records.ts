import type { ListRequest } from '../db/page'
import type { ReceivedFile } from './files'

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

/** A file written whole, with what the form said of it. */
export interface NewFile extends ReceivedFile {
  field: string
  filename: string
  contentType: string
}

/** An upload to register: its files are written and wait for its rows. */
export interface NewUpload {
  id: string
  description: string | null
  isPublic: boolean
  owner: Owner
  files: readonly NewFile[]
}

/**
 * The uploads' rows (the files' bytes are the file store's). Written for a database without a
 * single writer: every write is one statement or one transaction, and nothing is read first.
 */
export interface UploadRecords {
  /**
   * Registers an upload and its files in one transaction; settles once the rows are durable,
   * or rejects having registered nothing.
   */
  insert(upload: NewUpload): Promise<UploadRecord>
  get(id: string): Promise<UploadRecord | null>
  /** One file with what access to it depends on (its upload's visibility and owner). */
  file(id: string): Promise<StoredFile | null>
  /** Deletes an upload's rows; the ids of its files, or null when there was no such upload. */
  remove(id: string): Promise<string[] | null>
  count(): Promise<number>
  /** Which of these file ids have rows (the sweep keeps those files). */
  registered(fileIds: readonly string[]): Promise<ReadonlySet<string>>
  /** A page of every upload with its files, newest first. */
  list(page: ListRequest): Promise<{ data: UploadRecord[]; total: number }>
}

/**
 * The uploads' writes as a unit of work does them: the rows of an upload (its record is
 * `recordOfNew`'s, nothing is read back) and their deletion.
 */
export interface UploadRecordWrites {
  insert(upload: NewUpload, createdAt: string): Promise<void>
  /** Deletes an upload's rows; the ids of its files, or null when there was no such upload. */
  remove(id: string): Promise<string[] | null>
}

/** The record of an upload as `UploadRecordWrites.insert` stores it. */
export function recordOfNew(upload: NewUpload, createdAt: string): UploadRecord {
  return {
    id: upload.id,
    description: upload.description,
    isPublic: upload.isPublic,
    owner: upload.owner,
    createdAt,
    files: upload.files.map((file) => ({
      id: file.fileId,
      field: file.field,
      filename: file.filename,
      contentType: file.contentType,
      size: file.size,
      sha256: file.sha256,
    })),
  }
}

/** An uploads row as both databases store it (`public`: 0 or 1 in SQLite, a boolean in PostgreSQL). */
export interface UploadRow {
  id: string
  description: string | null
  public: boolean | number
  owner_user_id: number | null
  owner_key_id: number | null
  created_at: string
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

export function uploadOfRow(row: UploadRow, files: readonly FileRow[]): UploadRecord {
  return {
    id: row.id,
    description: row.description,
    isPublic: Boolean(row.public),
    owner: { userId: row.owner_user_id, keyId: row.owner_key_id },
    createdAt: row.created_at,
    files: files.map(fileOfRow),
  }
}

/** A files row joined with what access to it depends on, its upload's columns. */
export function storedFileOfRow(row: FileRow & Omit<UploadRow, 'id'>): StoredFile {
  return {
    ...fileOfRow(row),
    uploadId: row.upload_id,
    isPublic: Boolean(row.public),
    owner: { userId: row.owner_user_id, keyId: row.owner_key_id },
  }
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
