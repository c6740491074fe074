import { AppError, payloadTooLarge } from '../errors/errors'

/** Bytes still allowed for the whole request (shared by every file in it). */
export interface Budget {
  remaining: number
}

export interface ReceiveLimits {
  /** Largest size of this file. */
  maxFileSize: number
  /** The request's budget, decreased as bytes arrive. */
  budget: Budget
}

/** A file received in full: pending until it is placed, and gone if it is discarded. */
export interface ReceivedFile {
  fileId: string
  size: number
  sha256: string
}

/**
 * Where uploaded files live, behind one type (as PocketBase's tools/filesystem puts local disk
 * and S3): local disk today, object storage next. A file is received as pending (counted and
 * hashed while it streams), placed when its rows commit, or discarded; it is read back as a
 * Blob, whose `slice` serves Range requests the same way for every store. No module outside a
 * store knows where its files are.
 */
export interface FileStore {
  /** What the startup line says (never a secret). */
  readonly description: string
  /**
   * Whether `sweep` may run while uploads are in flight (hourly, with the housekeeping): a
   * bucket's sweep only takes what is past its grace; the disk's takes every pending file.
   */
  readonly sweepsWhileServing: boolean
  /**
   * Streams bytes into a new pending file, counting and hashing them. Over a limit: 413. Full:
   * 507. Failing: 503. On any failure nothing is left behind.
   */
  receive(source: AsyncIterable<Uint8Array>, limits: ReceiveLimits): Promise<ReceivedFile>
  /**
   * Makes received files readable under their ids, durably. Runs inside the transaction that
   * registers them, so it must not wait on anything but the store itself.
   */
  place(fileIds: readonly string[]): void
  /**
   * After the transaction that registered them committed: the store stops tracking the files
   * as pending. Best effort: what it leaves, the sweep finds registered and keeps.
   */
  committed(fileIds: readonly string[]): Promise<void>
  /** Deletes files, pending or placed; missing ones are fine; best effort (see sweep). */
  discard(fileIds: readonly string[]): Promise<void>
  /**
   * A placed file's bytes, whole or one range (inclusive offsets). Rejects with 503 when the
   * store cannot be read, before any byte is answered.
   */
  read(fileId: string, range: ByteRange | null): Promise<Blob | ReadableStream<Uint8Array>>
  /** Whether a placed file is there (pending ones are not). */
  exists(fileId: string): Promise<boolean>
  /** Throws (or rejects) when the store cannot take new files (for /health). */
  check(): void | Promise<void>
  /**
   * After a crash: deletes every pending file, and every placed one `known` does not return
   * (placed, but its transaction did not commit). Resolves to how many went.
   */
  sweep(known: (fileIds: readonly string[]) => Promise<ReadonlySet<string>>): Promise<number>
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
 * The chunks of one file as they arrive, counted against its limit and the request's budget
 * (413 past either) and hashed; `digest` gives the SHA-256 once they are all read. Every store
 * receives through this, so the limits hold the same on disk and in a bucket.
 */
export function metered(source: AsyncIterable<Uint8Array>, limits: ReceiveLimits) {
  const hasher = new Bun.CryptoHasher('sha256')
  const counted = { size: 0, digest: () => hasher.digest('hex') }
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      counted.size += chunk.byteLength
      limits.budget.remaining -= chunk.byteLength
      if (counted.size > limits.maxFileSize) {
        throw payloadTooLarge(`A file is over the ${limits.maxFileSize}-byte limit`)
      }
      if (limits.budget.remaining < 0) throw payloadTooLarge('The upload is over its size limit')
      hasher.update(chunk)
      yield chunk
    }
  }
  return Object.assign(counted, { chunks: chunks() })
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
