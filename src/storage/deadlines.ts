import { DEFAULT_STORAGE_TIMEOUT_MS } from '../config'

/**
 * How long roster waits for one request to a bucket. Every call S3Store and IncompleteUploads
 * make goes through `beforeDeadline` with one of these two, so a bucket that never answers (or
 * an S3-compatible service that holds a request it does not support) costs a bounded wait, never
 * a request held open: data calls move file bytes (a part of an upload, a chunk of a download, a
 * page of a listing); control calls are small (delete an object, list or abort multipart
 * uploads), and a slow answer to one means the service is failing, not busy.
 */
export interface BucketDeadlines {
  readonly dataMs: number
  readonly controlMs: number
}

/** A control call waits at most this long, or the data calls' deadline when that is shorter. */
const CONTROL_CAP_MS = 10_000

/** The deadlines for a `--storage-timeout` of `timeoutMs` (the data calls' deadline). */
export function bucketDeadlines(timeoutMs: number = DEFAULT_STORAGE_TIMEOUT_MS): BucketDeadlines {
  return { dataMs: timeoutMs, controlMs: Math.min(CONTROL_CAP_MS, timeoutMs) }
}

/** A call to the bucket got no answer within its deadline. */
export class BucketTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`the bucket did not answer ${what} within ${ms} ms`)
    this.name = 'BucketTimeout'
  }
}

/**
 * `work`, or a BucketTimeout once `ms` have passed. Bun's S3 client takes no AbortSignal, so a
 * call past its deadline is left to finish or fail on its own; its result is ignored.
 */
export async function beforeDeadline<T>(
  work: Promise<T> | T,
  ms: number,
  what: string,
): Promise<T> {
  if (!(work instanceof Promise)) return work
  let timer: Timer | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BucketTimeout(what, ms)), ms)
  })
  // A call given up on may still reject later: that rejection is nobody's to handle.
  work.catch(() => {})
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}
