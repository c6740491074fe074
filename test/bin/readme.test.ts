// The README runs: every shell block of README.md with a curl in it is executed, in order, in
// one bash session against the compiled binary, with curl failing on any answer of 400 or
// more. A documented command that stops working breaks CI.
import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { BINARY, cleanEnv, requireBinary, runCommand, startBinary } from '../helpers/binary'

setDefaultTimeout(60_000)
beforeAll(requireBinary)

/** The secrets the README's webhook examples sign with. */
const WEBHOOK_SECRETS = [
  'whsec_your_stripe_secret',
  'your-github-secret',
  'whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXktMzJieXQ=',
].join(',')

/** The ```sh blocks of the README that call curl, in order. */
export function curlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[1] as string)
    .filter((block) => /^\s*[^#\n]*\bcurl\b/m.test(block))
}

describe('the README runs', () => {
  test('every curl example, in order, against the binary: each exits 0 and no answer is 4xx or 5xx', async () => {
    using dir = tempDir()
    const blocks = curlBlocks(readFileSync(join(import.meta.dir, '../../README.md'), 'utf8'))
    expect(blocks.length).toBeGreaterThanOrEqual(8)
    // The files the upload examples send.
    writeFileSync(join(dir.path, 'photo.png'), Buffer.alloc(4096, 7))
    writeFileSync(join(dir.path, 'notes.txt'), 'notes\n')
    writeFileSync(join(dir.path, 'backup.tar.gz'), Buffer.alloc(2048, 1))
    writeFileSync(join(dir.path, 'scan.pdf'), '%PDF-1.4\n')
    const env = cleanEnv({ ROSTER_WEBHOOK_SECRET: WEBHOOK_SECRETS })
    const server = await startBinary(['--data-dir', join(dir.path, 'data')], { cwd: dir.path, env })
    try {
      const port = new URL(server.url).port
      const script = [
        'set -euo pipefail',
        `roster() { ${JSON.stringify(BINARY)} "$@"; }`,
        // Any answer of 400 or more fails the step, with the body shown.
        'curl() { command curl --fail-with-body --show-error "$@"; }',
        ...blocks.map(
          (block, n) =>
            `echo "--- README block ${n + 1}" >&2\n${block.replaceAll('localhost:8080', `127.0.0.1:${port}`)}`,
        ),
      ].join('\n')
      writeFileSync(join(dir.path, 'readme.sh'), script)
      const { code, stdout, stderr } = await runCommand(['bash', join(dir.path, 'readme.sh')], {
        cwd: dir.path,
        env: { ...env, ROSTER_DATA_DIR: join(dir.path, 'data') },
      })
      expect({
        code,
        tail: code === 0 ? '' : `${stdout.slice(-1500)}\n${stderr.slice(-1500)}`,
      }).toEqual({
        code: 0,
        tail: '',
      })
      // The examples did what they say.
      expect(stdout).toContain('"status":"ok"')
      expect(stdout).toMatch(/^idempotent-replayed: true/im)
      expect(stdout).toMatch(/HTTP\/1\.1 304/)
      expect(stdout).toContain('"authenticated":true')
      expect(stdout).toContain('"revoked":true')
      expect(stdout).toContain('"received":true')
      expect(readFileSync(join(dir.path, 'copy.png'))).toEqual(
        readFileSync(join(dir.path, 'photo.png')),
      )
      expect(readFileSync(join(dir.path, 'part.bin')).byteLength).toBe(1024)
    } finally {
      await server.stop()
    }
  })
})
