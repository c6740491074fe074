import { newId } from '../db/random-id'
import { payloadTooLarge } from '../errors/errors'
import { BucketTimeout } from '../storage/deadlines'
import {
  type ByteRange,
  type FileStore,
  storageError,
  storageUnavailable,
} from '../storage/file-store'

/**
 * A file being written to a shared store is listed as pending here before its first byte
 * goes out, and touched while it streams; one idle for longer belongs to an upload whose
 * instance died or whose clean-up failed (the store was down), and the sweep deletes it. An
 * upload in progress touches its row as its bytes arrive, and a client that sends nothing for
 * 30 s is cut off by the server.
 */
export const PENDING_IDLE_MS = 5 * 60 * 1000
/** How often an upload in progress refreshes its pending row, at most. */
const TOUCH_EVERY_MS = 30_000
const SWEEP_BATCH = 500
const SWEEP_ROUNDS = 20
const DELETE_ATTEMPTS = 3

/** The files being written to a shared store, listed in the shared database. */
export interface PendingFiles {
  add(fileId: string, startedAt: number): Promise<void>
  /** The upload of this file is still going: its row is fresh again. */
  touch(fileId: string, at: number): Promise<void>
  remove(fileIds: readonly string[]): Promise<void>
  /** Up to `limit` pending ids last touched (or started) before `cutoff` (epoch ms). */
  idleSince(cutoff: number, limit: number): Promise<string[]>
}

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

/** A file written whole: it counts once the rows that name it commit (see `committed`). */
export interface ReceivedFile {
  fileId: string
  size: number
  sha256: string
}

export interface UploadFilesOptions {
  store: FileStore
  /** The database's list of pending files: needed when the store is shared. */
  pending: PendingFiles | null
  /** Which of these ids the database has rows for. */
  registered(fileIds: readonly string[]): Promise<ReadonlySet<string>>
  clock: () => number
}

export type UploadFiles = ReturnType<typeof createUploadFiles>

/**
 * The life of an uploaded file, the same on every store. Received: counted against its
 * limits, hashed, written whole under a new id (listed as pending first, on a shared store).
 * Committed: the rows that name it are durable, so it is no longer pending. Discarded: anything
 * else, at once; and what a crash or an outage left, the sweep finds: on a store of its own,
 * every file it holds that no row names (at start, before anything is written); on a shared
 * one, the pending files idle past PENDING_IDLE_MS that no row names (every minute).
 */
export function createUploadFiles(options: UploadFilesOptions) {
  const { store, registered, clock } = options
  const pending = store.shared ? options.pending : null
  if (store.shared && pending === null) {
    throw new Error(`${store.description} is shared: its files need a list of pending files`)
  }

  /** Deletes each file (tried three times) and forgets the ones that went; true when all did. */
  async function discard(fileIds: readonly string[]): Promise<boolean> {
    // One at a time: a delete the service refuses for a moment (S3's 503 SlowDown; s3rver's
    // race between deletes under one prefix) should not leave work to the sweep. One that
    // still fails stays pending, and the sweep tries again.
    const gone: string[] = []
    for (const id of fileIds) if (await deleteWithRetries(id)) gone.push(id)
    if (gone.length > 0) await pending?.remove(gone).catch(() => {})
    return gone.length === fileIds.length
  }

  async function deleteWithRetries(fileId: string): Promise<boolean> {
    for (let attempt = 1; attempt <= DELETE_ATTEMPTS; attempt += 1) {
      try {
        await store.delete(fileId)
        return true
      } catch (error) {
        // A bucket that did not answer in time is failing, not busy: the sweep tries later.
        if (error instanceof BucketTimeout) return false
        if (attempt < DELETE_ATTEMPTS) await Bun.sleep(50 * attempt)
      }
    }
    return false
  }

  /**
   * Clean-up never holds an answer: it runs after, and a file it could not delete stays
   * pending for the sweep. `settled` waits for the clean-ups under way (shutdown, tests).
   */
  const cleanups = new Set<Promise<unknown>>()
  function discardLater(fileIds: readonly string[]): void {
    if (fileIds.length === 0) return
    const cleanup = discard(fileIds)
      .catch(() => {})
      .finally(() => cleanups.delete(cleanup))
    cleanups.add(cleanup)
  }

  let sweeping: Promise<number> | null = null

  /** What the sweep looks at: idle pending files, or (a store of its own) all of them. */
  async function* candidates(): AsyncGenerator<string[]> {
    if (pending !== null) {
      const cutoff = clock() - PENDING_IDLE_MS
      // Bounded: a batch whose deletes failed comes back unchanged, and must not spin.
      for (let round = 0; round < SWEEP_ROUNDS; round += 1) {
        const stale = await pending.idleSince(cutoff, SWEEP_BATCH)
        if (stale.length > 0) yield stale
        if (stale.length < SWEEP_BATCH) return
      }
      return
    }
    let batch: string[] = []
    for await (const id of store.list()) {
      batch.push(id)
      if (batch.length === SWEEP_BATCH) {
        yield batch
        batch = []
      }
    }
    if (batch.length > 0) yield batch
  }

  async function sweepOnce(): Promise<number> {
    let removed = 0
    for await (const ids of candidates()) {
      const known = await registered(ids)
      await pending?.remove(ids.filter((id) => known.has(id)))
      const orphans = ids.filter((id) => !known.has(id))
      await discard(orphans)
      removed += orphans.length
    }
    return removed
  }

  return {
    /**
     * Streams one file into the store under a new id (or `fileId`: `roster copy` keeps ids).
     * Over a limit: 413; the store full: 507; failing: 503; an error of `source` (a client gone)
     * as it is. On any failure nothing of the file is kept: its clean-up starts at once, and
     * what it cannot delete stays pending for the sweep.
     */
    async receive(
      source: AsyncIterable<Uint8Array>,
      limits: ReceiveLimits,
      fileId: string = newId('fil_'),
    ): Promise<ReceivedFile> {
      if (pending !== null) {
        await pending.add(fileId, clock()).catch(() => {
          throw storageUnavailable('nothing from this upload was kept')
        })
      }
      const file = metered(source, limits, (at) => pending?.touch(fileId, at), clock)
      try {
        await store.write(fileId, file.chunks)
        return { fileId, size: file.size, sha256: file.digest() }
      } catch (error) {
        discardLater([fileId])
        throw storageError(file.failure ?? error)
      }
    },

    /** The rows naming these files committed: they are no longer pending (best effort). */
    async committed(fileIds: readonly string[]): Promise<void> {
      await pending?.remove(fileIds).catch(() => {})
    },

    /** Deletes files, written or not; missing ones are fine; best effort (see sweep). */
    async discard(fileIds: readonly string[]): Promise<void> {
      await discard(fileIds)
    },

    /** Starts deleting files, written or not, without waiting (see `settled`). */
    discardLater,

    /** Whether committed files must be listed as pending before their rows go (`retiring`). */
    tracksPending: pending !== null,

    /**
     * Committed files whose rows are about to be deleted, listed as pending again first: a
     * delete that then fails, or a crash, leaves them to the sweep, never untracked in the
     * bucket. Harmless if the rows stay: the sweep keeps a file a row names.
     */
    async retiring(fileIds: readonly string[]): Promise<void> {
      const at = clock()
      // An id listed already (a second delete at once) is fine as it is.
      await Promise.all(fileIds.map((id) => pending?.add(id, at).catch(() => {})))
    },

    /** Resolves once every clean-up started by now has finished (or given up). */
    async settled(): Promise<void> {
      while (cleanups.size > 0) await Promise.all(cleanups)
    },

    read: (fileId: string, range: ByteRange | null) => store.read(fileId, range),

    /**
     * Deletes what failures and crashes left (see above); resolves to how many files went. One
     * sweep at a time: a call while one runs gets that one's result.
     */
    sweep(): Promise<number> {
      sweeping ??= sweepOnce().finally(() => {
        sweeping = null
      })
      return sweeping
    },
  }
}

/**
 * The chunks of one file as they arrive, counted against its limit and the request's budget
 * (413 past either) and hashed; `digest` gives the SHA-256 once they are all read. `failure`
 * keeps what went wrong with the source (a limit, a client gone), which outranks whatever the
 * store made of it. While bytes flow, `touch` is called every TOUCH_EVERY_MS at most.
 */
function metered(
  source: AsyncIterable<Uint8Array>,
  limits: ReceiveLimits,
  touch: (at: number) => Promise<void> | undefined,
  clock: () => number,
) {
  const hasher = new Bun.CryptoHasher('sha256')
  const counted = {
    size: 0,
    failure: null as unknown,
    digest: () => hasher.digest('hex'),
  }
  let touchedAt = clock()
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of source) {
        counted.size += chunk.byteLength
        limits.budget.remaining -= chunk.byteLength
        if (counted.size > limits.maxFileSize) {
          throw payloadTooLarge(`A file is over the ${limits.maxFileSize}-byte limit`)
        }
        if (limits.budget.remaining < 0) throw payloadTooLarge('The upload is over its size limit')
        hasher.update(chunk)
        if (clock() - touchedAt >= TOUCH_EVERY_MS) {
          touchedAt = clock()
          // Best effort: a database that does not answer fails the upload's commit anyway.
          await touch(touchedAt)?.catch(() => {})
        }
        yield chunk
      }
    } catch (error) {
      counted.failure = error
      throw error
    }
  }
  return Object.assign(counted, { chunks: chunks() })
}
