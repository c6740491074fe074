import type { S3Client } from 'bun'
import { newId } from '../db/random-id'
import { AppError } from '../errors/errors'
import { withinMs } from '../timers'
import {
  type ByteRange,
  type FileStore,
  metered,
  type ReceivedFile,
  type ReceiveLimits,
  storageUnavailable,
} from './file-store'
import type { IncompleteUploads } from './multipart-uploads'

/** Parts of a multipart upload: S3's smallest; at most PART_SIZE × QUEUE_SIZE buffered. */
const PART_SIZE = 5 * 1024 * 1024
const QUEUE_SIZE = 1
/**
 * A full garbage collection after this many bytes sent to the bucket (by all uploads of this
 * process together). Uploads through Bun's S3 writer leave the request's chunks and the
 * writer's part buffers for the collector, which lets them pile up: a 1 GiB upload peaked at
 * 106–124 MB (13 runs) against 91–96 MB on disk, over the 120 MB target. Collecting every
 * 40 MiB holds it at 99–106 MB (8 runs); each collection takes ~9 ms (at most 16), 25 per GiB.
 */
const COLLECT_EVERY = 40 * 1024 * 1024
/**
 * A pending object touched within this long may still be streaming in on some instance; the
 * sweep leaves it. An upload in progress touches its row as parts go out (and a client that
 * sends nothing for 30 s is cut off by the server), so one idle for longer belongs to an upload
 * whose instance died or whose clean-up failed (the bucket was down).
 */
export const PENDING_IDLE_MS = 5 * 60 * 1000
/** How often an upload in progress refreshes its pending row, at most. */
const TOUCH_EVERY_MS = 30_000
/** /health gives the bucket this long to answer. */
const CHECK_TIMEOUT_MS = 3000
const SWEEP_BATCH = 500
const SWEEP_ROUNDS = 20
const DELETE_ATTEMPTS = 3

/** The objects being written, recorded in the shared database (the bucket is never listed). */
export interface PendingObjects {
  add(fileId: string, startedAt: number): Promise<void>
  /** The upload of this object is still going: its row is fresh again. */
  touch(fileId: string, at: number): Promise<void>
  remove(fileIds: readonly string[]): Promise<void>
  /** Up to `limit` pending ids last touched (or started) before `cutoff` (epoch ms). */
  idleSince(cutoff: number, limit: number): Promise<string[]>
}

/** Where the objects live: `s3://BUCKET[/PREFIX]` and the endpoint (no credentials). */
export interface BucketLocation {
  bucket: string
  prefix: string
  endpoint: string | null
}

/**
 * Files as objects in an S3-compatible bucket, `<prefix>/<file id>`. An object is written at
 * its final key while it streams in, with a row in the database's pending list written first:
 * an upload that fails is deleted at once, one whose instance dies is still listed and the
 * sweep deletes it. Nothing reads an object before its upload row commits, so placing is
 * nothing; the pending row goes once the upload row committed.
 */
export class S3Store implements FileStore {
  readonly description: string
  readonly sweepsWhileServing = true
  private sentSinceCollect = 0

  constructor(
    private readonly client: S3Client,
    private readonly location: BucketLocation,
    private readonly pending: PendingObjects,
    private readonly clock: () => number,
    /** Aborts what a failed upload left as a multipart upload in progress. */
    private readonly incomplete: IncompleteUploads,
  ) {
    const where = `s3://${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`
    this.description = location.endpoint === null ? where : `${where} at ${location.endpoint}`
  }

  private key(fileId: string): string {
    return this.location.prefix === '' ? fileId : `${this.location.prefix}/${fileId}`
  }

  receive(source: AsyncIterable<Uint8Array>, limits: ReceiveLimits): Promise<ReceivedFile> {
    return this.receiveAs(newId('fil_'), source, limits)
  }

  /** `receive` under a given id (`roster copy` keeps every file's id). */
  async receiveAs(
    fileId: string,
    source: AsyncIterable<Uint8Array>,
    limits: ReceiveLimits,
  ): Promise<ReceivedFile> {
    try {
      await this.pending.add(fileId, this.clock())
    } catch {
      throw storageUnavailable('nothing from this upload was kept')
    }
    const writer = this.client
      .file(this.key(fileId))
      .writer({ partSize: PART_SIZE, queueSize: QUEUE_SIZE, retry: 1 })
    const file = metered(source, limits)
    let unflushed = 0
    let touchedAt = this.clock()
    try {
      for await (const chunk of file.chunks) {
        const written = writer.write(chunk)
        if (typeof written !== 'number') await written
        // The writer buffers whatever it is given (a 1 GiB upload held 1.1 GB, measured):
        // waiting on a flush each part keeps at most a few parts in memory.
        unflushed += chunk.byteLength
        if (unflushed >= PART_SIZE) {
          unflushed = 0
          const flushed = writer.flush()
          if (typeof flushed !== 'number') await flushed
          this.collectNowAndThen()
          if (this.clock() - touchedAt >= TOUCH_EVERY_MS) {
            touchedAt = this.clock()
            // Best effort: a database that does not answer fails the upload's commit anyway.
            await this.pending.touch(fileId, touchedAt).catch(() => {})
          }
        }
      }
      await writer.end()
      return { fileId, size: file.size, sha256: file.digest() }
    } catch (error) {
      await Promise.resolve()
        .then(() => writer.end(error as Error))
        .catch(() => {})
      await this.discard([fileId])
      if (error instanceof AppError) throw error
      throw storageUnavailable('nothing from this upload was kept')
    }
  }

  private collectNowAndThen(): void {
    this.sentSinceCollect += PART_SIZE
    if (this.sentSinceCollect < COLLECT_EVERY) return
    this.sentSinceCollect = 0
    Bun.gc(true)
  }

  place(_fileIds: readonly string[]): void {
    // The object is already at its key; its upload row is what makes it readable.
  }

  async committed(fileIds: readonly string[]): Promise<void> {
    await this.pending.remove(fileIds)
  }

  async discard(fileIds: readonly string[]): Promise<void> {
    // One at a time, each tried up to three times: a delete the service refuses for a moment (S3's 503
    // SlowDown; s3rver's race between deletes under one prefix) should not leave work to the
    // sweep. One that still fails stays listed as pending, and the sweep tries again.
    const gone: string[] = []
    for (const id of fileIds) {
      if (await this.delete(id)) gone.push(id)
    }
    if (gone.length > 0) await this.pending.remove(gone).catch(() => {})
  }

  /** The object and any multipart upload still in progress for it; true once both are gone. */
  private async delete(fileId: string): Promise<boolean> {
    const key = this.key(fileId)
    for (let attempt = 1; attempt <= DELETE_ATTEMPTS; attempt += 1) {
      try {
        await this.client.delete(key)
        await this.incomplete.abort(key)
        return true
      } catch {
        if (attempt < DELETE_ATTEMPTS) await Bun.sleep(50 * attempt)
      }
    }
    return false
  }

  async read(fileId: string, range: ByteRange | null): Promise<ReadableStream<Uint8Array>> {
    const object = this.client.file(this.key(fileId))
    const part = range === null ? object : object.slice(range.start, range.end + 1)
    const reader = part.stream().getReader()
    // The first chunk is awaited here, so an unreachable bucket is a 503 before any header.
    let first: Awaited<ReturnType<typeof reader.read>>
    try {
      first = await reader.read()
    } catch {
      throw storageUnavailable('the file cannot be read now')
    }
    return new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) controller.close()
        else controller.enqueue(first.value)
      },
      async pull(controller) {
        const next = await reader.read()
        if (next.done) controller.close()
        else controller.enqueue(next.value)
      },
      cancel(reason) {
        return reader.cancel(reason)
      },
    })
  }

  exists(fileId: string): Promise<boolean> {
    return this.client.exists(this.key(fileId))
  }

  async check(): Promise<void> {
    // One key at most, under our prefix: proves the bucket is there and we may read it.
    await withinMs(
      this.client.list({ prefix: this.key('.health'), maxKeys: 1 }),
      CHECK_TIMEOUT_MS,
      'the bucket did not answer',
    )
  }

  /**
   * Deletes the objects, and aborts the multipart uploads, of uploads that died with their
   * instance or whose clean-up failed: pending and idle for longer than PENDING_IDLE_MS, and not
   * registered. A registered one only loses its pending row (its instance died between the
   * commit and `committed`).
   */
  async sweep(
    known: (fileIds: readonly string[]) => Promise<ReadonlySet<string>>,
  ): Promise<number> {
    const cutoff = this.clock() - PENDING_IDLE_MS
    let removed = 0
    // Bounded: a batch whose deletes failed comes back unchanged, and must not spin.
    for (let round = 0; round < SWEEP_ROUNDS; round += 1) {
      const stale = await this.pending.idleSince(cutoff, SWEEP_BATCH)
      const registered = await known(stale)
      await this.pending.remove(stale.filter((id) => registered.has(id)))
      const orphans = stale.filter((id) => !registered.has(id))
      await this.discard(orphans)
      removed += orphans.length
      if (stale.length < SWEEP_BATCH) break
    }
    return removed
  }
}
