import { Elysia } from 'elysia'
import { LineWriter } from '../log'
import type { MappedAnswer } from './json-response'
import { pathOf, type RouteTable } from './route-table'
import { CATCH_ALL } from './unrouted'

interface Entry {
  at: number
  requestId: string
  method: string
  /** The route template; the catch-all's `/*` is resolved from the path when the line is written. */
  route: string
  path: string
  status: number
  ms: number
  bytes: number | null
}

/**
 * The access log: one JSON line per request (time, request_id, method, route, status, ms,
 * bytes). The request path only records the numbers; the route lookup and the formatting run
 * in the batch written after the current turn of the event loop.
 */
export class AccessLog {
  private readonly writer: LineWriter
  private pending: Entry[] = []
  private scheduled = false
  private lastMs = 0
  private lastIso = ''

  constructor(
    path: string | null,
    private readonly routes: RouteTable,
  ) {
    this.writer = new LineWriter(path)
  }

  record(entry: Entry): void {
    this.pending.push(entry)
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.drain())
    }
  }

  async close(): Promise<void> {
    this.drain()
    await this.writer.close()
  }

  private drain(): void {
    this.scheduled = false
    const batch = this.pending
    if (batch.length === 0) return
    this.pending = []
    let text = ''
    for (const entry of batch) text += this.format(entry)
    this.writer.write(text)
  }

  // request_id is [A-Za-z0-9._-] and route templates are ours, so only the method needs quoting.
  private format(entry: Entry): string {
    const route = entry.route === CATCH_ALL ? this.routes.match(entry.path)?.template : entry.route
    return `{"time":"${this.iso(entry.at)}","request_id":"${entry.requestId}","method":${JSON.stringify(entry.method)},"route":${route === undefined ? 'null' : `"${route}"`},"status":${entry.status},"ms":${entry.ms},"bytes":${entry.bytes}}\n`
  }

  private iso(at: number): string {
    if (at !== this.lastMs) {
      this.lastMs = at
      this.lastIso = new Date(at).toISOString()
    }
    return this.lastIso
  }
}

const STARTED = Symbol('roster.startedAt')

/**
 * Wires the access log into the app: `startClock` (an onRequest hook, registered first) times
 * each request, and `onAnswer` (given to jsonResponses) records the line as the answer leaves.
 * The start time rides on the request's `set` object under a symbol (the same object reaches
 * every hook); a WeakMap keyed by Request measured slower and left more for the GC.
 */
export function accessLogging(log: AccessLog) {
  return {
    startClock: new Elysia({ name: 'access-log' }).onRequest(function startClock({ set }) {
      ;(set as Timed)[STARTED] = performance.now()
    }),
    onAnswer(answer: MappedAnswer): void {
      const begun = (answer.set as Timed)[STARTED] ?? performance.now()
      log.record({
        at: Date.now(),
        requestId: answer.requestId,
        method: answer.request.method,
        route: answer.route,
        path: answer.route === CATCH_ALL ? pathOf(answer.request.url) : '',
        status: answer.status,
        ms: Math.round((performance.now() - begun) * 100) / 100,
        bytes: answer.bytes,
      })
    },
  }
}

interface Timed {
  [STARTED]?: number
}
