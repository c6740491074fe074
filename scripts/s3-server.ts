// An S3 server for tests: s3rver (a pinned dev dependency) in a temp directory on a free
// loopback port, with one bucket, and the two multipart operations it lacks added by
// scripts/s3rver-multipart.cjs; or, with `stock: true`, s3rver as published, without them (501
// NotImplemented and 405 MethodNotAllowed), like some S3-compatible stores. s3rver does not
// check request signatures, so the tests prove roster's S3 traffic is well-formed, not that its
// credentials are right (Bun's client signs).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './postgres-server'

export interface S3Server {
  endpoint: string
  bucket: string
  /** The variables Bun's S3 client reads (s3rver's fixed test credentials). */
  env: Record<string, string>
  /** Stops the server (its files stay until `remove`). */
  stop(): void
  /** Starts it again on the same port and directory, as after an outage. */
  start(): Promise<void>
  remove(): void
}

export const TEST_BUCKET = 'roster-test'

export const MISSING_S3RVER =
  'the S3 test server is missing: run `npm ci` (s3rver is a pinned dev dependency)'

export async function startS3(
  options: {
    reapWith?: number
    /** s3rver as published: no ListMultipartUploads, no AbortMultipartUpload. */
    stock?: boolean
  } = {},
): Promise<S3Server> {
  const s3rver = join(import.meta.dir, '..', 'node_modules', 's3rver')
  if (!(await Bun.file(join(s3rver, 'package.json')).exists())) throw new Error(MISSING_S3RVER)
  const base = mkdtempSync(join(tmpdir(), 'roster-s3-'))
  const port = await freePort()
  const endpoint = `http://127.0.0.1:${port}`
  let child: ReturnType<typeof Bun.spawn> | null = null
  const start = async () => {
    // Under Node, with OpenSSL's legacy provider: s3rver makes the continuation token of a
    // listing longer than one page with DES, which OpenSSL 3 leaves out (and Bun lacks), so
    // without it every truncated listing answers an internal error.
    const args = options.stock
      ? ['-d', base, '-a', '127.0.0.1', '-p', String(port), '-s', '--configure-bucket', TEST_BUCKET]
      : ['127.0.0.1', String(port), base, TEST_BUCKET]
    // Stock: s3rver's own command; else with ListMultipartUploads and AbortMultipartUpload added.
    const script = options.stock
      ? join(s3rver, 'bin', 's3rver.js')
      : join(import.meta.dir, 's3rver-multipart.cjs')
    // Its errors go to a file, not a pipe: a pipe nobody reads fills up (every aborted request
    // logs a stack), and s3rver then blocks on its next write and answers nothing more.
    child = Bun.spawn(['node', '--openssl-legacy-provider', script, ...args], {
      stdio: ['ignore', 'ignore', Bun.file(join(base, 's3rver.log'))],
    })
    if (options.reapWith !== undefined) reap(child.pid, options.reapWith)
    await waitUntilUp(endpoint, child, join(base, 's3rver.log'))
  }
  await start()
  return {
    endpoint,
    bucket: TEST_BUCKET,
    env: {
      S3_ENDPOINT: endpoint,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_REGION: 'us-east-1',
    },
    stop() {
      child?.kill('SIGKILL')
      child = null
    },
    start,
    remove() {
      child?.kill('SIGKILL')
      rmSync(base, { recursive: true, force: true })
    },
  }
}

async function waitUntilUp(endpoint: string, child: ReturnType<typeof Bun.spawn>, log: string) {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break
    const answered = await fetch(`${endpoint}/${TEST_BUCKET}?max-keys=1`).then(
      (response) => response.status,
      () => 0,
    )
    if (answered === 200) return
    await Bun.sleep(100)
  }
  child.kill('SIGKILL')
  const stderr = await Bun.file(log)
    .text()
    .catch(() => '')
  throw new Error(`s3rver did not start: ${stderr.split('\n')[0] ?? ''}`)
}

/** A detached watcher: when the test process is gone, so is the server. */
function reap(pid: number, parent: number) {
  Bun.spawn(
    [
      'sh',
      '-c',
      `while kill -0 ${parent} 2>/dev/null; do sleep 1; done; kill -9 ${pid} 2>/dev/null`,
    ],
    { stdio: ['ignore', 'ignore', 'ignore'], detached: true },
  ).unref()
}
