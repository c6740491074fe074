// The live audit feed (GET /events) for the console. EventSource cannot send X-API-Key, and a
// key never goes in a URL, so the stream is read with fetch, with EventSource's habits: frames
// end at a blank line, `id:` is remembered and sent back as Last-Event-ID on a reconnect, which
// comes after a pause when the stream ends or breaks (the server ends each after 10 minutes).

import { credentialOf } from './api'

export type FeedState = 'connecting' | 'live' | 'reconnecting' | 'stopped'

export interface FeedFrame {
  id: string
  data: string
}

const RECONNECT_MS = 3000

/**
 * Follows `path` until the returned function is called: `onFrame` gets every event frame,
 * `onState` how the connection is. A 401 or 403 stops it (the sign-in ended or may not).
 */
export function follow(
  path: string,
  onFrame: (frame: FeedFrame) => void,
  onState: (state: FeedState) => void,
): () => void {
  const stopping = new AbortController()
  let lastId: string | null = null
  const run = async () => {
    for (let attempt = 0; !stopping.signal.aborted; attempt += 1) {
      onState(attempt === 0 ? 'connecting' : 'reconnecting')
      const credential = credentialOf()
      try {
        const response = await fetch(path, {
          headers: {
            accept: 'text/event-stream',
            ...credential.headers,
            ...(lastId === null ? {} : { 'last-event-id': lastId }),
          },
          credentials: credential.credentials,
          cache: 'no-store',
          signal: stopping.signal,
        })
        if (response.status === 401 || response.status === 403) break
        if (response.ok && response.body !== null) {
          onState('live')
          await readFrames(response.body, (frame) => {
            lastId = frame.id
            onFrame(frame)
          })
        }
      } catch {
        // The stream broke (or was stopped): reconnect below, unless stopped.
      }
      if (stopping.signal.aborted) break
      onState('reconnecting')
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS))
    }
    onState('stopped')
  }
  void run()
  return () => stopping.abort()
}

async function readFrames(
  body: ReadableStream<Uint8Array>,
  onFrame: (frame: FeedFrame) => void,
): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const frame = parseFrame(buffer.slice(0, end))
      buffer = buffer.slice(end + 2)
      if (frame !== null) onFrame(frame)
    }
  }
}

/** A frame with an id and data, or null for a comment (heartbeat) or a `retry:` line. */
function parseFrame(block: string): FeedFrame | null {
  let id: string | null = null
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'id') id = value
    if (field === 'data') data.push(value)
  }
  return id === null || data.length === 0 ? null : { id, data: data.join('\n') }
}
