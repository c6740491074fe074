import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError, payloadTooLarge } from '../errors/errors'
import { newId } from './names'

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

export interface ReceivedFile {
  fileId: string
  tempPath: string
  size: number
  sha256: string
}

/**
 * Files on disk: `uploads/<file id>` once placed, `uploads/.incoming/<file id>` while they
 * stream in. A file is placed by a rename (atomic on one filesystem), so a reader never sees a
 * half-written file, and whatever is left in .incoming after a crash is deleted at start.
 */
export class UploadStorage {
  readonly incoming: string

  constructor(readonly dir: string) {
    this.incoming = join(dir, '.incoming')
    mkdirSync(this.incoming, { recursive: true })
  }

  pathOf(fileId: string): string {
    return join(this.dir, fileId)
  }

  /**
   * Streams bytes into a new temporary file, counting and hashing them as they pass, and
   * fsyncs it. Over a limit: 413. Disk full: 507. On any failure the partial file is deleted.
   */
  async receive(source: AsyncIterable<Uint8Array>, limits: ReceiveLimits): Promise<ReceivedFile> {
    const fileId = newId('fil_')
    const tempPath = join(this.incoming, fileId)
    const hasher = new Bun.CryptoHasher('sha256')
    const handle = await open(tempPath, 'wx', 0o640).catch((error: unknown) => {
      throw storageError(error)
    })
    let size = 0
    try {
      for await (const chunk of source) {
        size += chunk.byteLength
        limits.budget.remaining -= chunk.byteLength
        if (size > limits.maxFileSize) {
          throw payloadTooLarge(`A file is over the ${limits.maxFileSize}-byte limit`)
        }
        if (limits.budget.remaining < 0) throw payloadTooLarge('The upload is over its size limit')
        hasher.update(chunk)
        await writeAll(handle, chunk)
      }
      await handle.sync()
      await handle.close()
      return { fileId, tempPath, size, sha256: hasher.digest('hex') }
    } catch (error) {
      await handle.close().catch(() => {})
      rmSync(tempPath, { force: true })
      throw storageError(error)
    }
  }

  /** Renames received files into place and makes the renames durable (fsync of the directory). */
  place(files: readonly ReceivedFile[]): void {
    try {
      for (const file of files) renameSync(file.tempPath, this.pathOf(file.fileId))
      syncDirectory(this.dir)
    } catch (error) {
      throw storageError(error)
    }
  }

  /**
   * Deletes files (temporary or placed); missing ones are fine. Best effort: a file that
   * cannot be deleted now (the directory is failing) is swept at the next start.
   */
  discard(paths: readonly string[]): void {
    for (const path of paths) {
      try {
        rmSync(path, { force: true })
      } catch {
        // Left for the start-up sweep.
      }
    }
  }

  /**
   * After a crash: deletes everything in .incoming, and every placed file the database does
   * not know (a rename whose transaction did not commit). Returns how many files went.
   */
  sweep(isKnown: (fileId: string) => boolean): number {
    let removed = 0
    for (const name of readdirSync(this.incoming)) {
      rmSync(join(this.incoming, name), { force: true, recursive: true })
      removed += 1
    }
    for (const name of readdirSync(this.dir)) {
      if (name === '.incoming' || isKnown(name)) continue
      rmSync(join(this.dir, name), { force: true, recursive: true })
      removed += 1
    }
    return removed
  }
}

async function writeAll(
  handle: Awaited<ReturnType<typeof open>>,
  chunk: Uint8Array,
): Promise<void> {
  let offset = 0
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset)
    offset += bytesWritten
  }
}

function syncDirectory(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Disk full becomes 507; any other failure of the file system (the directory missing or
 * unwritable, a read-only or failing disk) is 503, as the error table says; our own errors
 * pass through; anything else is left as it is.
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
    return new AppError(
      'SERVICE_UNAVAILABLE',
      'The upload storage is failing; nothing from this upload was kept. Retry later',
      [],
      { 'retry-after': '5' },
    )
  }
  return error
}
