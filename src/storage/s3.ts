import type { S3Client } from 'bun'
import { type BucketDeadlines, beforeDeadline, bucketDeadlines } from './deadlines'
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
    /** How long each call to the bucket may take (see deadlines.ts). */
    private readonly deadlines: BucketDeadlines = bucketDeadlines(),
  ) {
    const where = `s3://${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`
    this.description = location.endpoint === null ? where : `${where} at ${location.endpoint}`
  }

  private key(fileId: string): string {
    return this.location.prefix === '' ? fileId : `${this.location.prefix}/${fileId}`
  }

  async write(fileId: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    const { dataMs, controlMs } = this.deadlines
    const writer = this.client
      .file(this.key(fileId))
      .writer({ partSize: PART_SIZE, queueSize: QUEUE_SIZE, retry: 1 })
    let unflushed = 0
    try {
      for await (const chunk of chunks) {
        await beforeDeadline(writer.write(chunk), dataMs, 'a part of an upload')
        // The writer buffers whatever it is given (a 1 GiB upload held 1.1 GB, measured):
        // waiting on a flush each part keeps at most a few parts in memory.
        unflushed += chunk.byteLength
        if (unflushed >= PART_SIZE) {
          unflushed = 0
          await beforeDeadline(writer.flush(), dataMs, 'a part of an upload')
          this.collectNowAndThen()
        }
      }
      await beforeDeadline(writer.end(), dataMs, 'the last part of an upload')
    } catch (error) {
      // The writer aborts its multipart upload; a bucket that does not answer that either
      // leaves it to delete() and the sweep.
      const ended = Promise.resolve().then(() => writer.end(error as Error))
      await beforeDeadline(ended, controlMs, 'an aborted upload').catch(() => {})
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
    await beforeDeadline(this.client.delete(key), this.deadlines.controlMs, 'a delete')
    await this.incomplete.abort(key)
  }

  async read(fileId: string, range: ByteRange | null): Promise<ReadableStream<Uint8Array>> {
    const object = this.client.file(this.key(fileId))
    const part = range === null ? object : object.slice(range.start, range.end + 1)
    const reader = part.stream().getReader()
    const { dataMs } = this.deadlines
    const next = () => beforeDeadline(reader.read(), dataMs, 'a download')
    // The first chunk is awaited here, so an unreachable bucket is a 503 before any header.
    let first: Awaited<ReturnType<typeof reader.read>>
    try {
      first = await next()
    } catch {
      reader.cancel().catch(() => {})
      throw storageUnavailable('the file cannot be read now')
    }
    return new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) controller.close()
        else controller.enqueue(first.value)
      },
      async pull(controller) {
        // A bucket that stops mid-file cuts the download off rather than holding it open.
        const chunk = await next().catch((error: unknown) => {
          reader.cancel().catch(() => {})
          throw error
        })
        if (chunk.done) controller.close()
        else controller.enqueue(chunk.value)
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
      const page = await beforeDeadline(
        this.client.list({ prefix: under || undefined, startAfter, maxKeys: 1000 }),
        this.deadlines.dataMs,
        'a listing',
      )
      const keys = (page.contents ?? []).map((object) => object.key)
      for (const key of keys) yield key.slice(under.length)
      if (page.isTruncated !== true || keys.length === 0) return
      startAfter = keys[keys.length - 1]
    }
  }

  async check(): Promise<void> {
    // One key at most, under our prefix: proves the bucket is there and we may read it.
    await beforeDeadline(
      this.client.list({ prefix: this.key('.health'), maxKeys: 1 }),
      Math.min(CHECK_TIMEOUT_MS, this.deadlines.controlMs),
      'a health check',
    )
  }
}
