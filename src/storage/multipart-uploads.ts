import { AwsClient } from 'aws4fetch'
import type { Logger } from '../log'
import { type BucketDeadlines, BucketTimeout, bucketDeadlines } from './deadlines'

/** What signs requests to the bucket: the credentials and place Bun's S3 client gets too. */
export interface BucketAccess {
  bucket: string
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
  region?: string
  /** The S3-compatible service's base URL; null: AWS in `region`. */
  endpoint: string | null
}

/** The two operations, as the log names them. */
type Operation = 'ListMultipartUploads' | 'AbortMultipartUpload'

/** Deadlines missed in a row after which a service is taken to lack an operation it holds. */
const MISSED_DEADLINES_FOR_LACK = 3

/**
 * The multipart uploads a failed upload leaves in the bucket. Bun's S3 writer aborts its own on
 * an error when the bucket answers; when it does not (the bucket went away mid-upload), the
 * parts stay, billed and invisible to a listing of objects, until someone aborts them. Bun's
 * client can neither list nor abort them, so these two calls are signed here (SigV4, with
 * aws4fetch) and sent path-style, which AWS and every S3-compatible service take.
 *
 * Some S3-compatible services lack one or both: s3rver answers 501 NotImplemented and 405
 * MethodNotAllowed, others hold the request unanswered. Either is taken as a lack: a refusal
 * at once, a request past its deadline three times in a row (each right after the bucket
 * answered the object's delete, so it is not an outage). The lack is logged once and the
 * operation is not asked for again: objects are still deleted, and whatever parts are left are
 * the bucket's lifecycle rule's (docs/several-instances.md). Until then a call past its
 * deadline is a failure (BucketTimeout): the file stays pending and the sweep tries again.
 */
export class IncompleteUploads {
  private readonly aws: AwsClient
  private readonly base: string
  private readonly lacking = new Set<Operation>()
  /** Deadlines missed in a row, by operation (any answer resets it). */
  private readonly missed = new Map<Operation, number>()

  constructor(
    access: BucketAccess,
    private readonly options: { deadlines?: BucketDeadlines; log?: Logger } = {},
  ) {
    const region = access.region ?? 'us-east-1'
    this.aws = new AwsClient({
      accessKeyId: access.accessKeyId,
      secretAccessKey: access.secretAccessKey,
      sessionToken: access.sessionToken,
      region,
      service: 's3',
      // aws4fetch retries a 5xx ten times with backoff (51 s on average): a 501 for an
      // operation the service lacks would hold the clean-up that long. The callers retry.
      retries: 0,
    })
    const endpoint = access.endpoint ?? `https://s3.${region}.amazonaws.com`
    this.base = `${endpoint.replace(/\/+$/, '')}/${encodeURIComponent(access.bucket)}`
  }

  /**
   * Aborts every multipart upload in progress for exactly this key; rejects when it cannot.
   * Resolves at once when the bucket lacks either operation.
   */
  async abort(key: string): Promise<void> {
    if (this.lacking.size > 0) return
    const uploadIds = await this.list(key)
    for (const uploadId of uploadIds ?? []) {
      const url = `${this.base}/${encodeKey(key)}?uploadId=${encodeURIComponent(uploadId)}`
      const reply = await this.send(url, 'DELETE', 'AbortMultipartUpload')
      if (reply === null) return
      const text = await reply.text()
      // 404 NoSuchUpload: it completed or was aborted meanwhile; either way it is gone.
      if (reply.ok || reply.status === 404) continue
      if (this.lacks('AbortMultipartUpload', reply.status, text)) return
      throw new Error(`aborting a multipart upload answered ${reply.status}`)
    }
  }

  /** The ids of the multipart uploads in progress for exactly this key; null: not supported. */
  private async list(key: string): Promise<string[] | null> {
    const url = `${this.base}?uploads=&prefix=${encodeURIComponent(key)}`
    const reply = await this.send(url, 'GET', 'ListMultipartUploads')
    if (reply === null) return null
    const xml = await reply.text()
    if (!reply.ok) {
      if (this.lacks('ListMultipartUploads', reply.status, xml)) return null
      throw new Error(`listing multipart uploads answered ${reply.status}`)
    }
    const ids: string[] = []
    for (const upload of xml.matchAll(/<Upload>([\s\S]*?)<\/Upload>/g)) {
      const body = upload[1] ?? ''
      const uploadKey = unescapeXml(/<Key>([\s\S]*?)<\/Key>/.exec(body)?.[1] ?? '')
      const uploadId = unescapeXml(/<UploadId>([\s\S]*?)<\/UploadId>/.exec(body)?.[1] ?? '')
      if (uploadKey === key && uploadId !== '') ids.push(uploadId)
    }
    return ids
  }

  /**
   * One signed request, given up on (and aborted) after the control calls' deadline; null once
   * that deadline is missed so often that the service is taken to lack the operation.
   */
  private async send(url: string, method: string, operation: Operation): Promise<Response | null> {
    const ms = (this.options.deadlines ?? bucketDeadlines()).controlMs
    try {
      const reply = await this.aws.fetch(url, { method, signal: AbortSignal.timeout(ms) })
      this.missed.delete(operation)
      return reply
    } catch (error) {
      if ((error as Error).name !== 'TimeoutError') throw error
      const missed = (this.missed.get(operation) ?? 0) + 1
      this.missed.set(operation, missed)
      if (missed < MISSED_DEADLINES_FOR_LACK) throw new BucketTimeout(operation, ms)
      this.markLacking(operation, `left ${missed} requests in a row unanswered for ${ms} ms`)
      return null
    }
  }

  /**
   * Whether this answer says the service does not have `operation` (501 NotImplemented, 405
   * MethodNotAllowed, or either code in the error body); if so, it is marked as lacking.
   */
  private lacks(operation: Operation, status: number, body: string): boolean {
    const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1]
    const missing =
      status === 501 || status === 405 || code === 'NotImplemented' || code === 'MethodNotAllowed'
    if (missing)
      this.markLacking(operation, `answered ${status}${code === undefined ? '' : ` ${code}`}`)
    return missing
  }

  /** Not asked for again; the first lack is logged (once per process). */
  private markLacking(operation: Operation, how: string): void {
    if (this.lacking.size === 0) {
      this.options.log?.warn(
        `the bucket does not support ${operation} (it ${how}): roster deletes the objects of failed uploads but no longer aborts their multipart uploads; set a lifecycle rule that aborts incomplete multipart uploads`,
        { operation },
      )
    }
    this.lacking.add(operation)
  }
}

const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/')

function unescapeXml(text: string): string {
  return text.replace(/&(#\d+|#x[0-9a-f]+|lt|gt|amp|apos|quot);/gi, (_, entity: string) => {
    const named: Record<string, string> = { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' }
    if (entity[0] !== '#') return named[entity.toLowerCase()] ?? ''
    const code = entity[1] === 'x' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1))
    return String.fromCodePoint(code)
  })
}
