import type { AuditSource, Changes } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import { newId } from '../db/random-id'
import type { Transaction } from '../db/unit'
import { fieldDetail } from '../errors/details'
import { type ErrorDetail, validationFailed } from '../errors/errors'
import type { ByteRange } from '../storage/file-store'
import { DECEPTIVE_MESSAGE, hasDeceptiveCharacter } from '../text'
import { uploadFields } from './fields'
import type { UploadFiles } from './files'
import { cleanContentType, cleanFilename } from './names'
import {
  type NewFile,
  type Owner,
  recordOfNew,
  type UploadRecord,
  type UploadRecords,
  type UploadRecordWrites,
} from './records'

export type { FileRecord, Owner, StoredFile, UploadRecord } from './records'

/** One file of a form as it arrives: what the client said of it, and its bytes. */
export interface UploadPart {
  /** The form field's name (empty or missing is refused). */
  field: string | undefined
  filename: string | undefined
  contentType: string | undefined
  /** Read once; the next part arrives after it (or after it is skipped). */
  chunks: AsyncIterable<Uint8Array>
}

/**
 * An upload as a request brings it: its file parts in order, then what the rest of the form
 * held. `fields` and `problems` are complete once `parts` has ended.
 */
export interface UploadForm {
  parts: AsyncIterable<UploadPart>
  /** Text fields, each given once. */
  fields: ReadonlyMap<string, string>
  /** What the form itself got wrong (a repeated or overlong text field). */
  problems: readonly ErrorDetail[]
}

export interface UploadLimits {
  maxFileSize: number
  /** The files of one upload together. */
  maxUploadSize: number
}

export type UploadService = ReturnType<typeof createUploadService>

/**
 * Uploads: the one way in for their files and rows. A file is written whole before the rows
 * that name it commit, so no row ever points at a missing file; one whose rows did not commit
 * is deleted right after the answer, or by the sweep after a crash or a failed delete
 * (uploads/files.ts).
 */
const uploadTarget = (id: string) => ({ type: 'upload', id })

export function createUploadService(
  records: UploadRecords,
  files: UploadFiles,
  limits: UploadLimits,
  /** Registers and deletes rows with their audit events, in one unit of work each. */
  transaction: Transaction<{ uploads: UploadRecordWrites; audit: AuditWrites }>,
  now: () => Date,
) {
  /** Each file part into the store; a part with a bad name is read past and reported. */
  async function receiveParts(form: UploadForm, received: NewFile[]): Promise<ErrorDetail[]> {
    const budget = { remaining: limits.maxUploadSize }
    const problems: ErrorDetail[] = []
    const seen = new Set<string>()
    for await (const part of form.parts) {
      const problem = partProblem(part, seen)
      if (problem !== null) {
        problems.push(problem)
        for await (const _ of part.chunks); // skipped, so the next part can come
        continue
      }
      seen.add(part.field as string)
      const file = await files.receive(part.chunks, { maxFileSize: limits.maxFileSize, budget })
      received.push({
        ...file,
        field: part.field as string,
        filename: cleanFilename(part.filename),
        contentType: cleanContentType(part.contentType),
      })
    }
    return problems
  }

  const service = {
    /**
     * Takes an upload as it streams in: its files into the store, then its fields checked and
     * its rows registered. On any failure (a bad field, a limit, the store, the database, the
     * client gone) nothing of it is kept.
     */
    async accept(form: UploadForm, owner: Owner, by: AuditSource): Promise<UploadRecord> {
      const received: NewFile[] = []
      try {
        const problems = await receiveParts(form, received)
        problems.push(...form.problems)
        if (received.length === 0 && problems.length === 0) {
          problems.push(fieldDetail('file', 'is required: send at least one file part'))
        }
        if (problems.length > 0) throw validationFailed(problems)
        const meta = uploadFields(form.fields)
        const upload = { id: newId('upl_'), ...meta, owner, files: received }
        const record = recordOfNew(upload, now().toISOString())
        await transaction(async (tx) => {
          await tx.uploads.insert(upload, record.createdAt)
          await tx.audit.record(by, {
            action: 'upload.created',
            target: uploadTarget(record.id),
            changes: uploadChanges(record, 'after'),
          })
        })
        await files.committed(received.map((file) => file.fileId))
        return record
      } catch (error) {
        // The answer does not wait for the clean-up (a bucket may be slow to delete).
        files.discardLater(received.map((file) => file.fileId))
        throw error
      }
    },

    get: (id: string) => records.get(id),
    file: (id: string) => records.file(id),
    count: () => records.count(),
    list: (page: { limit: number; offset: number }) => records.list(page),
    /** A registered file's bytes (see FileStore.read). */
    read: (fileId: string, range: ByteRange | null) => files.read(fileId, range),

    /**
     * Deletes the upload's rows and, once that has committed, starts deleting its files without
     * waiting for them (a file left by a failed delete or a crash in between is swept).
     */
    async remove(id: string, by: AuditSource): Promise<boolean> {
      if (files.tracksPending) {
        const upload = await records.get(id)
        if (upload === null) return false
        await files.retiring(upload.files.map((file) => file.id))
      }
      const fileIds = await transaction(async (tx) => {
        const removed = await tx.uploads.remove(id)
        if (removed !== null) {
          await tx.audit.record(by, { action: 'upload.deleted', target: uploadTarget(id) })
        }
        return removed
      })
      if (fileIds === null) return false
      files.discardLater(fileIds)
      return true
    },
  }
  return service
}

/** Why a file part cannot be kept: no name, a name given twice, a deceptive filename. */
/** An upload in its created event: what it holds and who may read it (never its bytes). */
function uploadChanges(record: UploadRecord, side: 'before' | 'after'): Changes {
  const values = {
    description: record.description,
    public: record.isPublic,
    files: record.files.map(({ id, field, filename, contentType, size, sha256 }) => ({
      id,
      field,
      filename,
      content_type: contentType,
      size,
      sha256,
    })),
  }
  const changes: Changes = {}
  for (const [field, value] of Object.entries(values)) {
    changes[field] =
      side === 'after' ? { before: null, after: value } : { before: value, after: null }
  }
  return changes
}

function partProblem(part: UploadPart, seen: ReadonlySet<string>): ErrorDetail | null {
  const { field, filename } = part
  // A part whose Content-Disposition has no usable name (busboy gives undefined or "").
  if (field === undefined || field === '') {
    return fieldDetail('file', 'every file part needs a name')
  }
  if (seen.has(field)) {
    return fieldDetail(field, 'is given more than once; file parts need distinct names')
  }
  if (filename !== undefined && hasDeceptiveCharacter(filename)) {
    return fieldDetail(`${field}.filename`, DECEPTIVE_MESSAGE, filename)
  }
  return null
}
