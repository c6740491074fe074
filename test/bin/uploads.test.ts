import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary } from '../helpers/binary'
import { randomBytes, sha256 } from '../helpers/multipart'

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
