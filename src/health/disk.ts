import { statfsSync } from 'node:fs'
import type { Logger } from '../log'

/** Free space must grow by this much after a refusal before the disk counts as usable again. */
const RECOVERY_BYTES = 1024 * 1024

/**
 * Whether writes are being refused for lack of space on the data directory's disk. A refused
 * write (ENOSPC, SQLITE_FULL: the 507s) marks the disk full and logs one error line for the
 * burst; a write that then goes through, or free space growing past what it was at the
 * refusal, clears it. /health reports the disk as failing in between, with the free bytes.
 */
export class DiskWatch {
  private refusedAtFree: number | null = null

  constructor(
    private readonly dir: string,
    private readonly log: Logger,
  ) {}

  /** Bytes an unprivileged writer may still use, or null when the filesystem will not say. */
  freeBytes(): number | null {
    try {
      const stats = statfsSync(this.dir)
      return Number(stats.bavail) * Number(stats.bsize)
    } catch {
      return null
    }
  }

  /** A write was refused for lack of space (answered 507). */
  refused(): void {
    if (this.refusedAtFree !== null) return
    const free = this.freeBytes()
    this.refusedAtFree = free ?? 0
    this.log.error('the disk is full: writes are refused with 507 until space is freed', {
      data_dir: this.dir,
      free_bytes: free,
    })
  }

  /** A write reached the disk: space is there again. Cheap enough for every commit. */
  wrote(): void {
    this.refusedAtFree = null
  }

  /** For /health: whether writes are being refused for space, and the free bytes now. */
  state(): { full: boolean; freeBytes: number | null } {
    const freeBytes = this.freeBytes()
    if (
      this.refusedAtFree !== null &&
      freeBytes !== null &&
      freeBytes >= this.refusedAtFree + RECOVERY_BYTES
    ) {
      this.refusedAtFree = null
    }
    return { full: this.refusedAtFree !== null, freeBytes }
  }
}
