import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary } from '../helpers/binary'
import { BOUNDARY, multipartType, randomBytes, sha256 } from '../helpers/multipart'
import { cutShort } from '../helpers/wire'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

async function curl(args: string[]): Promise<{ code: number; stdout: Buffer }> {
  const proc = Bun.spawn(['curl', '-s', '--fail-with-body', ...args], {
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const stdout = Buffer.from(await new Response(proc.stdout).arrayBuffer())
  return { code: await proc.exited, stdout }
}

describe('uploads through the compiled binary, with curl', () => {
  test('a multi-file form upload, a raw upload, and ranged downloads, byte for byte', async () => {
    using dir = tempDir()
    const server = await startBinary([
      '--data-dir',
      join(dir.path, 'data'),
      '--max-file-size',
      '2MiB',
    ])
    try {
      const big = randomBytes(1_500_000)
      const small = randomBytes(1000)
      writeFileSync(join(dir.path, 'big.bin'), big)
      writeFileSync(join(dir.path, 'small.dat'), small)
      const form = await curl([
        '-F',
        `first=@${join(dir.path, 'big.bin')}`,
        '-F',
        `second=@${join(dir.path, 'small.dat')};type=image/png;filename=../../x.png`,
        '-F',
        'description=from curl',
        '-F',
        'public=true',
        `${server.url}/upload`,
      ])
      expect(form.code).toBe(0)
      const upload = JSON.parse(form.stdout.toString()) as {
        id: string
        files: { id: string; url: string; sha256: string; filename: string }[]
      }
      expect(upload.files.map((f) => [f.filename, f.sha256])).toEqual([
        ['big.bin', sha256(big)],
        ['x.png', sha256(small)],
      ])

      const whole = await curl([`${server.url}${upload.files[0]?.url}`])
      expect(sha256(whole.stdout)).toBe(sha256(big))
      const ranged = await curl(['-r', '1000-1999', `${server.url}${upload.files[0]?.url}`])
      expect(ranged.stdout.equals(Buffer.from(big.subarray(1000, 2000)))).toBe(true)

      const rawUpload = await curl([
        '--data-binary',
        `@${join(dir.path, 'small.dat')}`,
        '-H',
        'Content-Type: application/octet-stream',
        '-H',
        'Content-Disposition: attachment; filename="raw.bin"',
        `${server.url}/v2/upload?description=raw`,
      ])
      const rawBody = JSON.parse(rawUpload.stdout.toString())
      expect(rawBody.files[0]).toMatchObject({
        filename: 'raw.bin',
        size: 1000,
        sha256: sha256(small),
      })

      writeFileSync(join(dir.path, 'huge.bin'), randomBytes(3 * 1024 * 1024))
      const tooBig = await curl([
        '-F',
        `file=@${join(dir.path, 'huge.bin')}`,
        `${server.url}/upload`,
      ])
      expect(tooBig.code).toBe(22)
      expect(JSON.parse(tooBig.stdout.toString()).error.code).toBe('PAYLOAD_TOO_LARGE')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('clients that go away mid-upload (the compiled binary)', () => {
  test('are the client’s doing: 499 in the access log and metrics, info on stderr, never a 5xx', async () => {
    using dir = tempDir()
    const logFile = join(dir.path, 'access.log')
    const server = await startBinary(['--data-dir', join(dir.path, 'data'), '--log-file', logFile])
    const heads = [
      'POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: 5000000\r\n\r\n',
      `POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${multipartType()}\r\nContent-Length: 5000000\r\n\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n`,
      'POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"name":',
    ]
    try {
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          // Always less than the declared length: the body is cut off, never complete.
          cutShort(
            server.url,
            heads[i % 3] as string,
            randomBytes(i % 3 === 2 ? 100 : 200_000),
            100,
          ),
        ),
      )
      await Bun.sleep(300)
      const metrics = await (await fetch(`${server.url}/metrics`)).text()
      expect(metrics).toContain('route="/upload",status="499"} 20')
      expect(metrics).toContain('route="/users",status="499"} 10')
      expect(metrics).not.toMatch(/status="5\d\d"/)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    expect(server.stderr.filter((line) => line.includes('"level":"error"'))).toEqual([])
    const gone = server.stderr.filter((line) => line.includes('client closed the connection'))
    expect(gone).toHaveLength(30)
    const statuses = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.method === 'POST')
      .map((entry) => entry.status)
    expect(statuses).toEqual(Array(30).fill(499))
  })
})

describe('downloads through the compiled binary (Bun.serve, not app.handle)', () => {
  test('a Range roster declines (spaces, several ranges, stale If-Range) is the whole file, once; unknown types are attachments', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', join(dir.path, 'data')])
    try {
      const put = async (name: string, type: string) => {
        const reply = await fetch(`${server.url}/upload`, {
          method: 'POST',
          headers: { 'content-type': multipartType() },
          body: new Blob([
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="public"\r\n\r\ntrue\r\n`,
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\nabcdefghijklmnopqrstuvwxyz\r\n--${BOUNDARY}--\r\n`,
          ]),
        })
        expect(reply.status).toBe(201)
        return `${server.url}${(await reply.json()).files[0].url}`
      }
      const text = await put("it's (1).txt", 'text/plain')
      for (const [range, ifRange] of [
        ['bytes = 0-5', null],
        ['bytes=0-1,4-5', null],
        ['bytes=0-5', '"stale-etag"'],
      ]) {
        const head = await curl([
          '-i',
          '-H',
          `Range: ${range}`,
          ...(ifRange ? ['-H', `If-Range: ${ifRange}`] : []),
          text,
        ])
        const answer = head.stdout.toString('latin1')
        expect(answer).toStartWith('HTTP/1.1 200')
        expect(answer.match(/^accept-ranges:/gim)).toHaveLength(1)
        expect(answer).not.toMatch(/^content-range:/im)
        expect(answer).toEndWith('\r\n\r\nabcdefghijklmnopqrstuvwxyz')
      }
      const ranged = (await curl(['-i', '-H', 'Range: bytes=0-5', text])).stdout.toString('latin1')
      expect(ranged).toStartWith('HTTP/1.1 206')
      expect(ranged.match(/^accept-ranges:/gim)).toHaveLength(1)
      expect(ranged).toEndWith('\r\n\r\nabcdef')
      const disposition = (url: string) =>
        fetch(url).then((reply) => reply.headers.get('content-disposition') ?? '')
      expect(await disposition(text)).toBe(
        `inline; filename="it's (1).txt"; filename*=UTF-8''it%27s%20%281%29.txt`,
      )
      for (const type of [
        'multipart/x-mixed-replace',
        'application/x-shockwave-flash',
        'text/html',
      ])
        expect(await disposition(await put('x.bin', type))).toStartWith('attachment;')
      expect(await disposition(await put('x.png', 'image/png'))).toStartWith('inline;')
    } finally {
      await server.stop()
    }
  })

  test('HEAD answers a file’s headers without reading it (Bun’s router reaches the HEAD route)', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', join(dir.path, 'data')])
    try {
      const size = 20 * 1024 * 1024
      const reply = await fetch(`${server.url}/upload?filename=big.bin&public=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: new Uint8Array(size),
      })
      expect(reply.status).toBe(201)
      const url = `${server.url}${(await reply.json()).files[0].url}`
      // Bytes the process has read from files and sockets so far (Linux).
      const readSoFar = () =>
        Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${server.proc.pid}/io`, 'utf8'))?.[1])
      const beforeHead = readSoFar()
      const head = await fetch(url, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('content-length')).toBe(String(size))
      expect(head.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/)
      expect(await head.text()).toBe('')
      const readByHead = readSoFar() - beforeHead
      expect(readByHead).toBeLessThan(1024 * 1024)
      // The measure sees a download: the same file by GET reads it (sendfile counts too).
      const beforeGet = readSoFar()
      expect((await (await fetch(url)).arrayBuffer()).byteLength).toBe(size)
      expect(readSoFar() - beforeGet).toBeGreaterThanOrEqual(size)
    } finally {
      await server.stop()
    }
  })
})
