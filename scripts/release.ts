// Builds roster for every platform it ships on, into dist/release/:
// roster-<version>-<os>-<arch>[.exe] with the options of `npm run build` (scripts/build.ts),
// plus SHA256SUMS. Bun fetches each target's runtime from the npm registry the first time.
// Usage: bun scripts/release.ts [--only linux-x64,linux-arm64]
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pkg from '../package.json'
import { assertConsoleCurrent, build, gitCommit, mapsOf } from './build'

const root = join(import.meta.dir, '..')
export const RELEASE_DIR = join(root, 'dist/release')

/** What roster ships for: the artifact's name part, Bun's target, and what `file` must say. */
export const TARGETS = [
  {
    name: 'linux-x64',
    target: 'bun-linux-x64',
    format: /ELF 64-bit LSB executable, x86-64.*\/lib64\/ld-linux-x86-64\.so\.2/,
  },
  {
    name: 'linux-arm64',
    target: 'bun-linux-arm64',
    format: /ELF 64-bit LSB executable, ARM aarch64.*\/lib\/ld-linux-aarch64\.so\.1/,
  },
  {
    name: 'linux-x64-musl',
    target: 'bun-linux-x64-musl',
    format: /ELF 64-bit LSB executable, x86-64.*\/lib\/ld-musl-x86_64\.so\.1/,
  },
  {
    name: 'linux-arm64-musl',
    target: 'bun-linux-arm64-musl',
    format: /ELF 64-bit LSB executable, ARM aarch64.*\/lib\/ld-musl-aarch64\.so\.1/,
  },
  { name: 'darwin-x64', target: 'bun-darwin-x64', format: /Mach-O 64-bit x86_64 executable/ },
  { name: 'darwin-arm64', target: 'bun-darwin-arm64', format: /Mach-O 64-bit arm64 executable/ },
  {
    name: 'windows-x64',
    target: 'bun-windows-x64',
    format: /PE32\+ executable \(console\) x86-64/,
  },
] as const

export const artifactName = (name: string) =>
  `roster-${pkg.version}-${name}${name.startsWith('windows') ? '.exe' : ''}`

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

if (import.meta.main) {
  const { values } = parseArgs({ args: Bun.argv.slice(2), options: { only: { type: 'string' } } })
  const wanted = values.only?.split(',')
  const targets = TARGETS.filter((t) => wanted === undefined || wanted.includes(t.name))
  rmSync(RELEASE_DIR, { recursive: true, force: true })
  mkdirSync(RELEASE_DIR, { recursive: true })
  await assertConsoleCurrent()
  // One commit and one date for the whole release.
  const commit = gitCommit()
  const date = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  for (const { name, target } of targets) {
    const started = performance.now()
    const outfile = join(RELEASE_DIR, artifactName(name))
    build({ target, outfile, commit, date })
    // The source maps are for our own debugging, not shipped beside the executable.
    rmSync(mapsOf(outfile), { recursive: true, force: true })
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    console.log(
      `${artifactName(name).padEnd(34)} ${mib(statSync(outfile).size).padStart(10)}  (${seconds} s)`,
    )
  }
  const sums: string[] = []
  for (const file of readdirSync(RELEASE_DIR)
    .filter((f) => f.startsWith('roster-'))
    .sort()) {
    const bytes = await Bun.file(join(RELEASE_DIR, file)).arrayBuffer()
    sums.push(`${new Bun.CryptoHasher('sha256').update(bytes).digest('hex')}  ${file}`)
  }
  writeFileSync(join(RELEASE_DIR, 'SHA256SUMS'), `${sums.join('\n')}\n`)
  console.log(`SHA256SUMS: ${sums.length} files, commit ${commit}, built ${date}`)
}
