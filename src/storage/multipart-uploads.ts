import { AwsClient } from 'aws4fetch'

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

/**
 * The multipart uploads a failed upload leaves in the bucket. Bun's S3 writer aborts its own on
 * an error when the bucket answers; when it does not (the bucket went away mid-upload), the
 * parts stay, billed and invisible to a listing of objects, until someone aborts them. Bun's
 * client can neither list nor abort them, so these two calls are signed here (SigV4, with
 * aws4fetch) and sent path-style, which AWS and every S3-compatible service take.
 */
export class IncompleteUploads {
  private readonly aws: AwsClient
  private readonly base: string

  constructor(access: BucketAccess) {
    const region = access.region ?? 'us-east-1'
    this.aws = new AwsClient({
      accessKeyId: access.accessKeyId,
      secretAccessKey: access.secretAccessKey,
      sessionToken: access.sessionToken,
      region,
      service: 's3',
    })
    const endpoint = access.endpoint ?? `https://s3.${region}.amazonaws.com`
    this.base = `${endpoint.replace(/\/+$/, '')}/${encodeURIComponent(access.bucket)}`
  }

  /** Aborts every multipart upload in progress for exactly this key; rejects when it cannot. */
  async abort(key: string): Promise<void> {
    for (const uploadId of await this.list(key)) {
      const url = `${this.base}/${encodeKey(key)}?uploadId=${encodeURIComponent(uploadId)}`
      const reply = await this.aws.fetch(url, { method: 'DELETE' })
      await reply.arrayBuffer()
      // 404 NoSuchUpload: it completed or was aborted meanwhile; either way it is gone.
      if (!reply.ok && reply.status !== 404) {
        throw new Error(`aborting a multipart upload answered ${reply.status}`)
      }
    }
  }

  /** The ids of the multipart uploads in progress for exactly this key. */
  private async list(key: string): Promise<string[]> {
    const url = `${this.base}?uploads=&prefix=${encodeURIComponent(key)}`
    const reply = await this.aws.fetch(url, { method: 'GET' })
    const xml = await reply.text()
    if (!reply.ok) throw new Error(`listing multipart uploads answered ${reply.status}`)
    const ids: string[] = []
    for (const upload of xml.matchAll(/<Upload>([\s\S]*?)<\/Upload>/g)) {
      const body = upload[1] ?? ''
      const uploadKey = unescapeXml(/<Key>([\s\S]*?)<\/Key>/.exec(body)?.[1] ?? '')
      const uploadId = unescapeXml(/<UploadId>([\s\S]*?)<\/UploadId>/.exec(body)?.[1] ?? '')
      if (uploadKey === key && uploadId !== '') ids.push(uploadId)
    }
    return ids
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
