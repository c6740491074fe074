import { AppError } from '../errors/errors'

/**
 * Where uploaded files' bytes live, behind one narrow driver (as PocketBase's
 * tools/filesystem puts local disk and S3): a folder on disk, or an S3-compatible bucket. A
 * driver only moves bytes; when a file counts as uploaded, what a failure leaves and what the
 * sweep takes are the uploads' rules, written once in `uploads/files.ts`. No module outside a
 * driver knows where its files are.
 */
export interface FileStore {
  /** What the startup line says (never a secret). */
  readonly description: string
  /**
   * Whether other processes write here too (a bucket several instances share): files being
   * written elsewhere are then known only to the database's list of pending files. A store that
   * is not shared (the upload folder of one data directory) is listed whole by the sweep at start.
   */
  readonly shared: boolean
  /**
   * Writes a new file from `chunks`; resolves once it is whole and durable under `fileId`.
   * A failure may leave part of it behind, which `delete` removes. The store's own failures are
   * 507 (full) or 503 (failing); an error of `chunks` may come out as it is.
   */
  write(fileId: string, chunks: AsyncIterable<Uint8Array>): Promise<void>
  /**
   * A written file's bytes, whole or one range (inclusive offsets), as a Blob whose `slice`
   * serves ranges, or a stream. Rejects with 503 when the store cannot be read, before any
   * byte is answered.
   */
  read(fileId: string, range: ByteRange | null): Promise<Blob | ReadableStream<Uint8Array>>
  /** Removes a file and whatever a failed write of it left; a missing one is fine. */
  delete(fileId: string): Promise<void>
  /** The id of every file the store holds, whole or partly written. */
  list(): AsyncIterable<string>
  /** Throws (or rejects) when the store cannot take new files (for /health). */
  check(): void | Promise<void>
}

/** Inclusive byte offsets, as in `Content-Range`. */
export interface ByteRange {
  start: number
  end: number
}

/** The 503 a failing store answers: nothing of the request was kept, retry later. */
export function storageUnavailable(what: string): AppError {
  return new AppError(
    'SERVICE_UNAVAILABLE',
    `The upload storage is failing; ${what}. Retry later`,
    [],
    { 'retry-after': '5' },
  )
}

/**
 * Full storage becomes 507; any other failure of the storage (missing or unwritable, a
 * read-only or failing disk, an unreachable service) is 503, as the error table says; our own
 * errors pass through; anything else is left as it is.
 */
export function storageError(error: unknown): unknown {
  if (error instanceof AppError) return error
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new AppError(
      'INSUFFICIENT_STORAGE',
      'The disk is full; nothing from this upload was kept',
    )
  }
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    return storageUnavailable('nothing from this upload was kept')
  }
  return error
}
