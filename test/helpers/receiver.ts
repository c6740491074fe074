import type { Server } from 'bun'
import { Webhook } from 'standardwebhooks'
import { verifySignature } from '../../src/webhooks/signature'

/** A request the receiver took, as it arrived. */
export interface Received {
  at: number
  path: string
  headers: Record<string, string>
  body: string
  /** The body parsed (`{ type, timestamp, data }`). */
  payload: {
    type: string
    timestamp: string
    data: {
      id: string
      action: string
      target: { type: string; id: string | null }
      [field: string]: unknown
    }
  }
}

/**
 * How the receiver answers: `ok` 200 (or the status given), `fail` 500, `hang` never (until
 * the request is abandoned), `redirect` 302 to another URL of its own.
 */
export type ReceiverMode = 'ok' | 'fail' | 'hang' | 'redirect' | { status: number; body?: string }

/**
 * A real HTTP receiver for outbound webhooks on 127.0.0.1, started by the test: it records every
 * request (also those it answers with a failure) and can be made to fail, hang, go down and come
 * back on the same port.
 */
export async function startReceiver(mode: ReceiverMode = 'ok') {
  const received: Received[] = []
  const answered: Received[] = []
  let current: ReceiverMode = mode
  const waiting = new Set<() => void>()
  const handle = async (request: Request): Promise<Response> => {
    const body = await request.text()
    const entry: Received = {
      at: Date.now(),
      path: new URL(request.url).pathname,
      headers: Object.fromEntries(request.headers),
      body,
      payload: body === '' ? ({} as Received['payload']) : JSON.parse(body),
    }
    received.push(entry)
    for (const wake of waiting) wake()
    const now = current
    if (now === 'hang') return new Promise<Response>(() => {})
    if (now === 'fail') return new Response('receiver failing on purpose', { status: 500 })
    if (now === 'redirect') {
      return new Response(null, { status: 302, headers: { location: '/elsewhere' } })
    }
    if (typeof now === 'object') return new Response(now.body ?? '', { status: now.status })
    answered.push(entry)
    return new Response('ok', { status: 200 })
  }
  let server: Server<unknown> | null = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: handle })
  const port = server.port as number
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    /** Every request that arrived, in arrival order. */
    received,
    /** The requests answered 2xx: what the sender may count as delivered. */
    answered,
    set mode(next: ReceiverMode) {
      current = next
    },
    /** Stops listening: connections are refused until `up()`. */
    async down() {
      await server?.stop(true)
      server = null
    },
    up() {
      server ??= Bun.serve({ hostname: '127.0.0.1', port, fetch: handle })
    },
    /** Resolves once `count` requests have been answered 2xx (rejects after `ms`). */
    async until(count: number, ms = 10_000) {
      const deadline = Date.now() + ms
      while (answered.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`the receiver got ${answered.length} of ${count} deliveries in ${ms} ms`)
        }
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiting.delete(wake)
            resolve()
          }
          waiting.add(wake)
          setTimeout(wake, 50)
        })
      }
    },
    async [Symbol.asyncDispose]() {
      await server?.stop(true)
    },
  }
}

/**
 * Checks a delivery's signature with both verifiers: roster's own (the inbound one) and the
 * Standard Webhooks reference library from npm. Throws when either refuses.
 */
export function verifyDelivery(entry: Received, secret: string, at = new Date(entry.at)): void {
  verifySignature(
    new Headers(entry.headers),
    new TextEncoder().encode(entry.body),
    [secret],
    Math.floor(at.getTime() / 1000),
  )
  new Webhook(secret).verify(entry.body, {
    'webhook-id': entry.headers['webhook-id'] ?? '',
    'webhook-timestamp': entry.headers['webhook-timestamp'] ?? '',
    'webhook-signature': entry.headers['webhook-signature'] ?? '',
  })
}
