// The release artifacts (npm run release), tested as shipped: the linux-x64 one natively and
// the linux-arm64 one under qemu-aarch64-static run the smoke flow; the others (musl, macOS,
// Windows) cannot run here and are checked to be executables of their target's format.
// Run by `npm run test:release` (and .ci/run), not by `npm test`: it needs qemu-user-static and
// libc6-arm64-cross from Debian, which .ci/run installs.
import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { artifactName, RELEASE_DIR, TARGETS } from '../../scripts/release'
import { tempDir } from '../helpers/app'
import { cleanEnv, startBinary } from '../helpers/binary'
import { multipartBody, multipartType, sha256 } from '../helpers/multipart'
import { STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

setDefaultTimeout(120_000)

const QEMU = '/usr/bin/qemu-aarch64-static'
const ARM64_ROOT = '/usr/aarch64-linux-gnu'
const artifact = (name: string) => join(RELEASE_DIR, artifactName(name))

beforeAll(() => {
  const missing = TARGETS.map((t) => artifact(t.name)).filter((path) => !existsSync(path))
  if (missing.length > 0)
    throw new Error(`missing ${missing.join(', ')}: run \`npm run release\` first`)
})

/** How each runnable artifact is started here. */
const RUNNABLE: { name: string; executable: () => string[] }[] = [
  { name: 'linux-x64', executable: () => [artifact('linux-x64')] },
  {
    name: 'linux-arm64',
    executable: () => {
      if (!existsSync(QEMU) || !existsSync(ARM64_ROOT)) {
        throw new Error(
          'running the arm64 artifact needs qemu: apt-get install -y qemu-user-static libc6-arm64-cross',
        )
      }
      return [QEMU, '-L', ARM64_ROOT, artifact('linux-arm64')]
    },
  },
]

describe.each(RUNNABLE)('the $name artifact, run', ({ name, executable }) => {
  test('--version names the version, commit, build date and target', () => {
    const run = Bun.spawnSync([...executable(), '--version'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout.toString()).toMatch(
      new RegExp(
        `^roster \\d+\\.\\d+\\.\\d+ \\(commit [0-9a-f]{12}(-dirty)?, built \\d{4}-\\d\\d-\\d\\dT[0-9:]{8}Z, bun-${name}\\)\\n$`,
      ),
    )
  })

  test('smoke: /health, create, read, an upload and its download, a signed webhook, SIGTERM → 0', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', join(dir.path, 'data')], {
      executable: executable(),
      env: cleanEnv({ ROSTER_WEBHOOK_SECRET: STRIPE_SECRET }),
      startTimeoutMs: 60_000,
    })
    try {
      const health = await fetch(`${server.url}/health`)
      expect(health.status).toBe(200)
      expect((await health.json()).status).toBe('ok')
      const created = await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', email: 'ada@example.com' }),
      })
      expect(created.status).toBe(201)
      const read = await fetch(`${server.url}/users/1`)
      expect(((await read.json()) as { email: string }).email).toBe('ada@example.com')

      const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 251)
      const uploaded = await fetch(`${server.url}/upload`, {
        method: 'POST',
        headers: { 'content-type': multipartType() },
        body: multipartBody([
          { name: 'file', filename: 'data.bin', data: bytes },
          { name: 'public', data: 'true' },
        ]),
      })
      expect(uploaded.status).toBe(201)
      const file = ((await uploaded.json()) as { files: { url: string; sha256: string }[] })
        .files[0]
      expect(file?.sha256).toBe(sha256(bytes))
      const download = await fetch(`${server.url}${file?.url}`)
      expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(sha256(bytes))

      const event = JSON.stringify({
        id: `evt_${name}`,
        type: 'customer.created',
        data: { object: { email: 'grace@example.com', name: 'Grace' } },
      })
      const delivered = await fetch(`${server.url}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await stripeHeaders(event)) },
        body: event,
      })
      expect(await delivered.json()).toEqual({ received: true })
      // Handled after the answer: the user appears shortly.
      let found = false
      for (let i = 0; i < 100 && !found; i++) {
        const search = await fetch(`${server.url}/v2/users?email=grace@example.com`)
        found = ((await search.json()) as { data: unknown[] }).data.length === 1
        if (!found) await Bun.sleep(100)
      }
      expect(found).toBe(true)
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0)
    }
  })
})

describe('every artifact, as built (musl, macOS and Windows cannot run here)', () => {
  test.each(TARGETS.map((t) => ({ name: t.name, format: t.format })))(
    '$name is an executable of its target’s format',
    ({ name, format }) => {
      const described = Bun.spawnSync(['file', '-b', artifact(name)]).stdout.toString()
      expect(described).toMatch(format)
    },
  )

  test('SHA256SUMS lists every artifact with its real hash, and `sha256sum -c` accepts it', () => {
    const sums = readFileSync(join(RELEASE_DIR, 'SHA256SUMS'), 'utf8').trim().split('\n')
    expect(sums.map((line) => line.split('  ')[1]).sort()).toEqual(
      TARGETS.map((t) => artifactName(t.name)).sort(),
    )
    const check = Bun.spawnSync(['sha256sum', '-c', 'SHA256SUMS'], { cwd: RELEASE_DIR })
    expect({
      exit: check.exitCode,
      out: check.stdout.toString().trim().split('\n').length,
    }).toEqual({
      exit: 0,
      out: TARGETS.length,
    })
  })

  test('a changed byte fails the check', () => {
    using dir = tempDir()
    const name = artifactName('linux-x64-musl')
    const bytes = readFileSync(join(RELEASE_DIR, name))
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0xff
    const line = readFileSync(join(RELEASE_DIR, 'SHA256SUMS'), 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(name))
    expect(line).toHaveLength(1)
    writeFileSync(join(dir.path, 'SHA256SUMS'), `${line.join('\n')}\n`)
    const check = () => Bun.spawnSync(['sha256sum', '-c', 'SHA256SUMS'], { cwd: dir.path })
    // The same line passes on the true bytes, so the failure below is the changed byte's.
    writeFileSync(join(dir.path, name), readFileSync(join(RELEASE_DIR, name)))
    expect(check().exitCode).toBe(0)
    writeFileSync(join(dir.path, name), bytes)
    const changed = check()
    expect(changed.exitCode).toBe(1)
    expect(changed.stdout.toString()).toContain(`${name}: FAILED`)
  })
})
