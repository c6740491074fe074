import { LineWriter } from '../log'

export interface AccessEntry {
  at: number
  requestId: string
  method: string
  /** The route template, or null when the path matched no route. */
  route: string | null
  status: number
  ms: number
  bytes: number | null
}

/**
 * The access log: one JSON line per request (time, request_id, method, route, status, ms,
 * bytes). The request path only records the numbers; the formatting and the write run in the
 * batch written after the current turn of the event loop.
 */
export class AccessLog {
  private readonly writer: LineWriter
  private pending: AccessEntry[] = []
  private scheduled = false
  private lastMs = 0
  private lastIso = ''

  constructor(path: string | null) {
    this.writer = new LineWriter(path)
  }

  record(entry: AccessEntry): void {
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
  private format(entry: AccessEntry): string {
    const route = entry.route === null ? 'null' : `"${entry.route}"`
    return `{"time":"${this.iso(entry.at)}","request_id":"${entry.requestId}","method":${JSON.stringify(entry.method)},"route":${route},"status":${entry.status},"ms":${entry.ms},"bytes":${entry.bytes}}\n`
  }

  private iso(at: number): string {
    if (at !== this.lastMs) {
      this.lastMs = at
      this.lastIso = new Date(at).toISOString()
    }
    return this.lastIso
  }
}
