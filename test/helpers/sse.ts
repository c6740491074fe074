/** One frame of a text/event-stream: its fields, or a comment line. */
export interface SseFrame {
  id?: string
  data?: string
  retry?: string
  comment?: string
}

/**
 * Reads a Server-Sent Events stream as EventSource does (RFC-less but WHATWG HTML §9.2): frames
 * end at a blank line; `field: value` lines; `:` starts a comment.
 */
export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new TextDecoder()
  private buffer = ''
  ended = false

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader()
  }

  /** The next frame, or null once the stream has ended; throws after `timeoutMs` of silence. */
  async next(timeoutMs = 5000): Promise<SseFrame | null> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 2)
        return parseFrame(block)
      }
      if (this.ended) return null
      let timer: Timer | undefined
      const silence = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no frame in time')), timeoutMs)
      })
      try {
        const { value, done } = await Promise.race([this.reader.read(), silence])
        if (done) this.ended = true
        else this.buffer += this.decoder.decode(value, { stream: true })
      } finally {
        clearTimeout(timer)
      }
    }
  }

  /** The next `count` frames with data, parsed; comments and `retry` frames skipped. */
  async events<T = { action: string; target: { id: string | null } }>(
    count: number,
    timeoutMs = 5000,
  ): Promise<{ id: string; event: T }[]> {
    const found: { id: string; event: T }[] = []
    while (found.length < count) {
      const frame = await this.next(timeoutMs)
      if (frame === null) throw new Error(`the stream ended after ${found.length} events`)
      if (frame.data !== undefined) {
        found.push({ id: frame.id ?? '', event: JSON.parse(frame.data) as T })
      }
    }
    return found
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {})
  }
}

function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {}
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      frame.comment = line.slice(1).trim()
      continue
    }
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'id' || field === 'data' || field === 'retry') frame[field] = value
  }
  return frame
}
