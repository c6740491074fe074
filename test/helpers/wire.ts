import { type AddressInfo, connect, createServer, type Socket } from 'node:net'

/**
 * A client that goes away: sends the request head and the start of its body over a raw
 * connection, waits `holdMs` (loopback delivers them meanwhile), then closes the connection.
 */
export async function cutShort(
  url: string,
  head: string,
  bodyStart: Uint8Array,
  holdMs = 150,
): Promise<void> {
  const { port } = new URL(url)
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(head)
      socket.write(bodyStart)
      setTimeout(() => {
        socket.destroy()
        resolve()
      }, holdMs)
    })
    socket.on('error', reject)
  })
}

/**
 * One keep-alive HTTP/1.1 connection that sends each request once and never replays it: when
 * the connection dies before an answer, `send` resolves to status 0 and the next request opens
 * a new connection. (fetch, like Go's client and browsers, replays a request whose pooled
 * connection died after it was written: a test of what a balancer sends cannot use it.)
 */
export class OnceClient {
  private socket: ReturnType<typeof connect> | null = null
  private buffer = Buffer.alloc(0)
  private waiting: ((status: number) => void) | null = null

  constructor(private readonly url: string) {}

  async send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body = '',
  ): Promise<number> {
    const socket = await this.connection()
    const payload = Buffer.from(body)
    const head = [
      `${method} ${path} HTTP/1.1`,
      `host: ${new URL(this.url).host}`,
      `content-length: ${payload.byteLength}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      '',
      '',
    ].join('\r\n')
    const answered = new Promise<number>((resolve) => {
      this.waiting = resolve
    })
    socket.write(Buffer.concat([Buffer.from(head), payload]))
    return await answered
  }

  close(): void {
    this.socket?.destroy()
  }

  private connection(): Promise<ReturnType<typeof connect>> {
    if (this.socket !== null) return Promise.resolve(this.socket)
    const { hostname, port } = new URL(this.url)
    return new Promise((resolve) => {
      const socket = connect(Number(port), hostname, () => resolve(socket))
      this.socket = socket
      this.buffer = Buffer.alloc(0)
      socket.on('data', (data: Buffer) => {
        this.buffer = Buffer.concat([this.buffer, data])
        this.readAnswer()
      })
      const gone = () => {
        if (this.socket === socket) this.socket = null
        this.settle(0)
      }
      socket.on('close', gone)
      socket.on('error', gone)
    })
  }

  /** Takes one whole answer (headers and a Content-Length body) off the buffer, if it is there. */
  private readAnswer(): void {
    const end = this.buffer.indexOf('\r\n\r\n')
    if (end === -1) return
    const head = this.buffer.subarray(0, end).toString()
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0)
    if (this.buffer.byteLength < end + 4 + length) return
    this.buffer = this.buffer.subarray(end + 4 + length)
    if (/\r\nconnection: *close/i.test(head)) {
      this.socket?.destroy()
      this.socket = null
    }
    this.settle(Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0))
  }

  private settle(status: number): void {
    const waiting = this.waiting
    this.waiting = null
    waiting?.(status)
  }
}

/**
 * A network link of limited bandwidth in front of `url`'s port: a TCP relay that passes what
 * the server sends at `bytesPerSecond` at most (requests go through as they come). A client
 * behind it reads as fast as it can, but no faster than a real network carries the bytes;
 * the server meets backpressure as it would there, which loopback alone hardly gives.
 */
export async function slowLink(url: string, bytesPerSecond: number) {
  const target = Number(new URL(url).port)
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  }
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1')
    track(client)
    track(upstream)
    client.pipe(upstream)
    upstream.on('data', (chunk: Buffer) => {
      // Each chunk takes the time the link needs to carry it; the server waits meanwhile.
      upstream.pause()
      client.write(chunk)
      setTimeout(() => upstream.resume(), (chunk.length / bytesPerSecond) * 1000)
    })
    upstream.on('end', () => client.end())
    upstream.on('close', () => client.destroy())
    client.on('close', () => upstream.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async [Symbol.asyncDispose]() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
