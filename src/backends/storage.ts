import type { S3Client } from 'bun'
import type { Config } from '../config'
import { ConfigError } from '../config-values'
import type { Logger } from '../log'
import type { FileStore } from '../storage/file-store'
import { LocalDiskStore } from '../storage/local-disk'
import type { BucketAccess } from '../storage/multipart-uploads'
import type { BucketLocation } from '../storage/s3'
import type { Backend } from './backend'

/** Storage the server cannot use: no credentials, or a bucket that does not answer. */
export class StorageOpenError extends Error {}

type Env = Record<string, string | undefined>

/**
 * The file store the config names: the upload folder, or an S3-compatible bucket whose
 * endpoint, region and credentials come from the variables Bun's S3 client reads (S3_* first,
 * then AWS_*). A bucket is checked before the server starts.
 */
export async function openFileStore(
  config: Config,
  uploadDir: string,
  backend: Pick<Backend, 'pendingFiles'>,
  env: Env = process.env,
  log?: Logger,
): Promise<FileStore> {
  if (config.storage === null) return new LocalDiskStore(uploadDir)
  if (backend.pendingFiles === null) {
    throw new ConfigError(
      '--storage s3://… needs --database-url postgres://…: the list of objects being written lives in the shared database',
    )
  }
  const { client, location, access } = bucketClient(config.storage, env)
  // Loaded only for a bucket: the embedded default starts without the S3 code.
  const [{ S3Store }, { IncompleteUploads }, { bucketDeadlines }] = await Promise.all([
    import('../storage/s3'),
    import('../storage/multipart-uploads'),
    import('../storage/deadlines'),
  ])
  const deadlines = bucketDeadlines(config.storageTimeout)
  const incomplete = new IncompleteUploads(access, { deadlines, log })
  const store = new S3Store(client, location, incomplete, deadlines)
  try {
    await store.check()
  } catch (error) {
    throw new StorageOpenError(
      `storage ${store.description} is not usable: ${oneLine((error as Error).message)}`,
    )
  }
  return store
}

/**
 * A client for the bucket, from the variables Bun's S3 client reads (S3_* first, then AWS_*);
 * StorageOpenError without credentials.
 */
export function bucketClient(
  storage: NonNullable<Config['storage']>,
  env: Env,
): { client: S3Client; location: BucketLocation; access: BucketAccess } {
  const read = (name: string) => env[`S3_${name}`] ?? env[`AWS_${name}`]
  const accessKeyId = read('ACCESS_KEY_ID')
  const secretAccessKey = read('SECRET_ACCESS_KEY')
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw new StorageOpenError(
      'missing S3 credentials: set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)',
    )
  }
  const endpoint = read('ENDPOINT') ?? null
  const access: BucketAccess = {
    bucket: storage.bucket,
    accessKeyId,
    secretAccessKey,
    sessionToken: read('SESSION_TOKEN'),
    region: read('REGION'),
    endpoint,
  }
  const client = new Bun.S3Client({ ...access, endpoint: endpoint ?? undefined })
  const shown = endpoint === null ? null : withoutUserinfo(endpoint)
  return { client, location: { ...storage, endpoint: shown }, access }
}

function withoutUserinfo(endpoint: string): string {
  try {
    const url = new URL(endpoint)
    url.username = ''
    url.password = ''
    return url.href.replace(/\/$/, '')
  } catch {
    return endpoint
  }
}

const oneLine = (text: string) => text.split('\n')[0]?.slice(0, 200) ?? ''
