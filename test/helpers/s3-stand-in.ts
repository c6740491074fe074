import type { Server } from 'bun'

/** Which requests a stand-in refuses (501 NotImplemented) or holds unanswered. */
export type Misbehaviour = 'refuse' | 'hold'

export interface S3StandIn extends AsyncDisposable {
  endpoint: string
  /** Requests held unanswered right now. */
  readonly held: number
  /** Requests refused or held so far. */
  readonly caught: number
}

/** S3's ListMultipartUploads (GET /BUCKET?uploads) and AbortMultipartUpload (DELETE …?uploadId=). */
export function isMultipartCleanup(request: Request): boolean {
  const url = new URL(request.url)
  const onBucket = url.pathname.split('/').filter(Boolean).length === 1
  if (request.method === 'GET' && onBucket) return url.searchParams.has('uploads')
  return request.method === 'DELETE' && url.searchParams.has('uploadId')
}

/**
 * A real HTTP server standing in for an S3-compatible service: it passes every request to
 * `upstream` (an s3rver) except those `catches` picks, which it refuses with S3's 501
 * NotImplemented or holds open without an answer until it stops, as some services do with an
 * operation they lack. With no upstream, every request is caught: a bucket that never answers.
 */
export function startS3StandIn(options: {
  upstream?: string
  catches?: (request: Request) => boolean
  misbehaviour: Misbehaviour
}): S3StandIn {
  const { upstream, misbehaviour } = options
  const catches = upstream === undefined ? () => true : (options.catches ?? isMultipartCleanup)
  const releases = new Set<() => void>()
  let caught = 0
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // Held requests stay held: Bun would otherwise close a connection idle for 10 s.
    idleTimeout: 0,
    async fetch(request) {
      if (!catches(request)) return forward(request, upstream as string)
      caught += 1
      if (misbehaviour === 'refuse') return notImplemented()
      await new Promise<void>((resolve) => releases.add(resolve))
      return new Response(null, { status: 503 })
    },
  })
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    get held() {
      return releases.size
    },
    get caught() {
      return caught
    },
    async [Symbol.asyncDispose]() {
      for (const release of releases) release()
      await server.stop(true)
    },
  }
}

async function forward(request: Request, upstream: string): Promise<Response> {
  const url = new URL(request.url)
  const headers = new Headers(request.headers)
  headers.delete('host')
  const body = request.body === null ? undefined : await request.arrayBuffer()
  const answer = await fetch(`${upstream}${url.pathname}${url.search}`, {
    method: request.method,
    headers,
    body,
    redirect: 'manual',
  })
  // Passed on as received: Bun has decoded the body, so its length and encoding are its own.
  const passed = new Headers(answer.headers)
  passed.delete('content-encoding')
  passed.delete('content-length')
  return new Response(answer.body, { status: answer.status, headers: passed })
}

function notImplemented(): Response {
  return new Response(
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header or query you provided implies functionality that is not implemented.</Message></Error>',
    { status: 501, headers: { 'content-type': 'application/xml' } },
  )
}
