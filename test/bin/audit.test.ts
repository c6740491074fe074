import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { BINARY, cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { SseReader } from '../helpers/sse'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

/** A line of a child's stdout, as it comes. */
async function nextLine(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  state: { buffer: string },
): Promise<string> {
  const decoder = new TextDecoder()
  const deadline = Date.now() + 10_000
  for (;;) {
    const newline = state.buffer.indexOf('\n')
    if (newline !== -1) {
      const line = state.buffer.slice(0, newline)
      state.buffer = state.buffer.slice(newline + 1)
      return line
    }
    if (Date.now() > deadline) throw new Error('no line in time')
    const { value, done } = await reader.read()
    if (done) throw new Error(`stdout ended: ${state.buffer}`)
    state.buffer += decoder.decode(value, { stream: true })
  }
}

describe('the audit log through the compiled binary', () => {
  test('roster audit shows who did what (the CLI, a key); --follow prints what comes next', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const made = await runBinary([
      'users',
      'create',
      '--name',
      'Ada',
      '--email',
      'ada@example.com',
      ...data,
    ])
    expect(made.code).toBe(0)
    const key = (await runBinary(['keys', 'create', '--name', 'ops', ...data])).stdout.trim()
    const server = await startBinary(data)
    try {
      const follow = Bun.spawn(
        [BINARY, 'audit', '--follow', '--json', '--target-type', 'user', ...data],
        {
          env: cleanEnv(),
          stdout: 'pipe',
          stderr: 'pipe',
        },
      )
      const reader = follow.stdout.getReader()
      const state = { buffer: '' }
      const first = JSON.parse(await nextLine(reader, state))
      expect(first).toMatchObject({
        action: 'user.created',
        actor: { type: 'cli' },
        target: { type: 'user', id: '1' },
        changes: { email: { before: null, after: 'ada@example.com' } },
      })
      const patched = await fetch(`${server.url}/users/1`, {
        method: 'PATCH',
        headers: {
          'x-api-key': key,
          'content-type': 'application/json',
          'x-request-id': 'req-cli-1',
        },
        body: JSON.stringify({ name: 'Ada L.' }),
      })
      expect(patched.status).toBe(200)
      const next = JSON.parse(await nextLine(reader, state))
      expect(next).toMatchObject({
        action: 'user.updated',
        actor: { type: 'api_key', id: '1' },
        request_id: 'req-cli-1',
        ip: '127.0.0.1',
        changes: { name: { before: 'Ada', after: 'Ada L.' } },
      })
      follow.kill('SIGINT')
      expect(await follow.exited).toBe(0)

      const table = await runBinary(['audit', '--action', 'user.*', ...data])
      expect(table.code).toBe(0)
      const lines = table.stdout.trim().split('\n')
      expect(lines[0]).toMatch(/^AT\s+ACTION\s+TARGET\s+ACTOR\s+REQUEST\s+CHANGES$/)
      expect(lines.slice(1).map((line) => line.split(/\s+/)[1])).toEqual([
        'user.created',
        'user.updated',
      ])
      const refused = await runBinary(['audit', '--actor-type', 'robot', ...data])
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: '' })
      expect(refused.stderr.trim().split('\n')).toHaveLength(1)
      expect(refused.stderr).toContain('--actor-type')
    } finally {
      await server.stop()
    }
  })

  test('GET /events streams through the binary, and a stop ends the streams at once', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const key = (await runBinary(['keys', 'create', '--name', 'ops', ...data])).stdout.trim()
    const server = await startBinary(data)
    const response = await fetch(`${server.url}/events?types=user.*`, {
      headers: { 'x-api-key': key },
    })
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const stream = new SseReader(response.body as ReadableStream<Uint8Array>)
    expect(await stream.next()).toEqual({ retry: '3000' })
    await Bun.sleep(50)
    await fetch(`${server.url}/users`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bo', email: 'bo@example.com' }),
    })
    const [created] = await stream.events(1)
    expect(created?.event).toMatchObject({ action: 'user.created', target: { id: '1' } })
    const stopping = Date.now()
    expect(await server.stop('SIGTERM')).toBe(0)
    expect(Date.now() - stopping).toBeLessThan(3000)
    expect(await stream.next()).toBeNull()
  })

  test('/events streams are capped per credential and in all (flags and environment); a client that hangs up frees its place', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const keyOf = async (name: string) =>
      (await runBinary(['keys', 'create', '--name', name, ...data])).stdout.trim()
    const [a, b] = [await keyOf('a'), await keyOf('b')]
    const server = await startBinary([...data, '--max-event-streams-per-credential', '2'], {
      env: cleanEnv({ ROSTER_MAX_EVENT_STREAMS: '3' }),
    })
    const hangUps: AbortController[] = []
    /** Opens a stream; a 200 is read up to its first frame and kept open. */
    const open = async (key: string) => {
      const hangUp = new AbortController()
      const response = await fetch(`${server.url}/events`, {
        headers: { 'x-api-key': key },
        signal: hangUp.signal,
      })
      if (response.status === 200) {
        hangUps.push(hangUp)
        expect(await new SseReader(response.body as ReadableStream<Uint8Array>).next()).toEqual({
          retry: '3000',
        })
      }
      return response
    }
    const expectRefused = async (key: string, message: string) => {
      const response = await open(key)
      expect(response.status).toBe(429)
      expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
      const body = (await response.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('RATE_LIMITED')
      expect(body.error.message).toContain(message)
    }
    try {
      expect((await open(a)).status).toBe(200)
      expect((await open(a)).status).toBe(200)
      await expectRefused(a, 'This credential has 2 event streams open')
      expect((await open(b)).status).toBe(200)
      await expectRefused(b, 'This server has 3 event streams open')
      // The first client hangs up: the server sees the connection close and frees its place.
      hangUps.shift()?.abort()
      let status = 0
      for (let tries = 0; tries < 100 && status !== 200; tries++) {
        await Bun.sleep(20)
        const response = await open(b)
        status = response.status
        if (status !== 200) await response.body?.cancel()
      }
      expect(status).toBe(200)
      await expectRefused(b, 'This credential has 2 event streams open')
    } finally {
      for (const hangUp of hangUps) hangUp.abort()
      await server.stop()
    }
    const bad = await runBinary(['serve', ...data, '--max-event-streams', '0'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--max-event-streams')
  })
})
