import type { S3Client } from 'bun'
import { withinMs } from '../timers'
import { type ByteRange, type FileStore, storageUnavailable } from './file-store'
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
/** /health gives the bucket this long to answer. */
const CHECK_TIMEOUT_MS = 3000

/** Where the objects live: `s3://BUCKET[/PREFIX]` and the endpoint (no credentials). */
export interface BucketLocation {
  bucket: string
  prefix: string
  endpoint: string | null
}

/**
 * Files as objects in an S3-compatible bucket, `<prefix>/<file id>`, written at their key as
 * they stream in (a multipart upload past 5 MiB). The bucket is shared by every instance; what
 * an instance writes is listed as pending in the shared database (uploads/files.ts).
 */
export class S3Store implements FileStore {
  readonly description: string
  readonly shared = true
  private sentSinceCollect = 0

  constructor(
    private readonly client: S3Client,
    private readonly location: BucketLocation,
    /** Aborts what a failed upload left as a multipart upload in progress. */
    private readonly incomplete: IncompleteUploads,
  ) {
    const where = `s3://${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`
    this.description = location.endpoint === null ? where : `${where} at ${location.endpoint}`
  }

  private key(fileId: string): string {
    return this.location.prefix === '' ? fileId : `${this.location.prefix}/${fileId}`
  }

  async write(fileId: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    const writer = this.client
      .file(this.key(fileId))
      .writer({ partSize: PART_SIZE, queueSize: QUEUE_SIZE, retry: 1 })
    let unflushed = 0
    try {
      for await (const chunk of chunks) {
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
        }
      }
      await writer.end()
    } catch (error) {
      await Promise.resolve()
        .then(() => writer.end(error as Error))
        .catch(() => {})
      throw storageUnavailable('nothing from this upload was kept')
    }
  }

  private collectNowAndThen(): void {
    this.sentSinceCollect += PART_SIZE
    if (this.sentSinceCollect < COLLECT_EVERY) return
    this.sentSinceCollect = 0
    Bun.gc(true)
  }

  /** The object and any multipart upload still in progress for it. */
  async delete(fileId: string): Promise<void> {
    const key = this.key(fileId)
    await this.client.delete(key)
    await this.incomplete.abort(key)
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

  async *list(): AsyncGenerator<string> {
    const { prefix } = this.location
    const under = prefix === '' ? '' : `${prefix}/`
    let startAfter: string | undefined
    for (;;) {
      const page = await this.client.list({ prefix: under || undefined, startAfter, maxKeys: 1000 })
      const keys = (page.contents ?? []).map((object) => object.key)
      for (const key of keys) yield key.slice(under.length)
      if (page.isTruncated !== true || keys.length === 0) return
      startAfter = keys[keys.length - 1]
    }
  }

  async check(): Promise<void> {
    // One key at most, under our prefix: proves the bucket is there and we may read it.
    await withinMs(
      this.client.list({ prefix: this.key('.health'), maxKeys: 1 }),
      CHECK_TIMEOUT_MS,
      'the bucket did not answer',
    )
  }
}
