import { MISSING_S3RVER, type S3Server, startS3, TEST_BUCKET } from '../../scripts/s3-server'
import { type BucketAccess, IncompleteUploads } from '../../src/storage/multipart-uploads'

interface TestS3 {
  endpoint: string
  bucket: string
  env: Record<string, string>
  own: S3Server | null
}

let server: Promise<TestS3> | null = null

/**
 * The S3 server of this test run: ROSTER_TEST_S3_ENDPOINT when set (npm run test:postgres sets
 * it to the s3rver it started), else an s3rver started here and stopped when the process exits.
 * Without s3rver installed this throws one line saying what to run: never a skip.
 */
export function testS3(): Promise<TestS3> {
  server ??= (async () => {
    const given = process.env.ROSTER_TEST_S3_ENDPOINT
    const credentials = { S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER' }
    if (given !== undefined && given !== '') {
      const env = { ...credentials, S3_ENDPOINT: given, S3_REGION: 'us-east-1' }
      // Tests that start a server or open deps themselves read the S3 settings from here.
      Object.assign(process.env, env)
      return { endpoint: given, bucket: TEST_BUCKET, env, own: null }
    }
    const own = await startS3({ reapWith: process.pid }).catch((error: Error) => {
      throw new Error(error.message.startsWith('s3rver') ? error.message : MISSING_S3RVER)
    })
    Object.assign(process.env, own.env)
    return { endpoint: own.endpoint, bucket: own.bucket, env: own.env, own }
  })()
  return server
}

let prefixes = 0

/** A prefix of its own in the test bucket for one test (as each test gets its own database). */
export async function freshStorage() {
  const s3 = await testS3()
  const prefix = `t${process.pid}-${Date.now().toString(36)}-${++prefixes}`
  return { storage: { bucket: s3.bucket, prefix }, env: s3.env, s3 }
}

/** The keys stored under a prefix (what a test checks nothing was left behind with). */
export async function objectsUnder(prefix: string, endpoint?: string): Promise<string[]> {
  const s3 = await testS3()
  const env = endpoint === undefined ? s3.env : { ...s3.env, S3_ENDPOINT: endpoint }
  const client = new Bun.S3Client({ ...clientOptions(env), bucket: s3.bucket })
  const listed = await client.list({ prefix: `${prefix}/` })
  return (listed.contents ?? []).map((item) => item.key.slice(prefix.length + 1)).sort()
}

export function clientOptions(env: Record<string, string>) {
  return {
    endpoint: env.S3_ENDPOINT,
    accessKeyId: env.S3_ACCESS_KEY_ID,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY,
    region: env.S3_REGION,
  }
}

/** What signs requests to the test bucket (for the store's multipart clean-up). */
export function bucketAccess(env: Record<string, string>, bucket: string): BucketAccess {
  return {
    bucket,
    accessKeyId: env.S3_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.S3_SECRET_ACCESS_KEY ?? '',
    region: env.S3_REGION,
    endpoint: env.S3_ENDPOINT ?? null,
  }
}

export const incompleteUploadsOf = (env: Record<string, string>, bucket: string) =>
  new IncompleteUploads(bucketAccess(env, bucket))

/**
 * The keys under a prefix with a multipart upload in progress (parts stored, never completed
 * or aborted): what a failed upload must not leave behind.
 */
export async function incompleteUploadsUnder(prefix: string, endpoint?: string): Promise<string[]> {
  const s3 = await testS3()
  const base = endpoint ?? s3.endpoint
  const reply = await fetch(
    `${base}/${s3.bucket}?uploads=&prefix=${encodeURIComponent(`${prefix}/`)}`,
  )
  const xml = await reply.text()
  if (!reply.ok) throw new Error(`listing multipart uploads: ${reply.status} ${xml}`)
  return [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((match) => match[1] as string).sort()
}
