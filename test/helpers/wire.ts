import { connect } from 'node:net'

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
