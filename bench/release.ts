// Start-up and idle memory of the release artifacts: linux-x64 natively, linux-arm64 under
// qemu-aarch64-static (informational: emulation is slow, and the RSS includes qemu's own).
// Usage: bun bench/release.ts [--runs 7]   (after `npm run release`)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { artifactName, RELEASE_DIR } from '../scripts/release'
import { median, readRss, waitForHealth } from './lib/process'

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { runs: { type: 'string', default: '7' } },
})
const runs = Number(values.runs)
const ARTIFACTS = [
  { name: 'linux-x64 (native)', command: [join(RELEASE_DIR, artifactName('linux-x64'))] },
  {
    name: 'linux-arm64 (qemu-aarch64-static)',
    command: [
      'qemu-aarch64-static',
      '-L',
      '/usr/aarch64-linux-gnu',
      join(RELEASE_DIR, artifactName('linux-arm64')),
    ],
  },
]

const dir = mkdtempSync(join(tmpdir(), 'roster-bench-release-'))
const lines = ['| artifact | spawn to first 200 (median) | idle RSS after 1 s |', '|---|---|---|']
try {
  for (const { name, command } of ARTIFACTS) {
    const data = join(dir, name.split(' ')[0] as string)
    await Bun.spawn([...command, 'migrate', '--data-dir', data], { stdout: 'ignore' }).exited
    const times: number[] = []
    let rss = 0
    for (let i = 0; i < runs; i++) {
      const port = 20000 + Math.floor(Math.random() * 20000)
      const started = performance.now()
      const proc = Bun.spawn([...command, 'serve', '--port', String(port), '--data-dir', data], {
        stdout: 'ignore',
        stderr: 'ignore',
      })
      await waitForHealth(`http://127.0.0.1:${port}`, 2)
      times.push(performance.now() - started)
      if (i === runs - 1) {
        await Bun.sleep(1000)
        rss = readRss(proc.pid)
      }
      proc.kill('SIGTERM')
      await proc.exited
    }
    lines.push(`| ${name} | ${median(times).toFixed(0)} ms | ${(rss / 1024).toFixed(1)} MB |`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(
  `${runs} starts each on an existing data dir, ${new Date().toISOString().slice(0, 10)}\n`,
)
console.log(lines.join('\n'))
