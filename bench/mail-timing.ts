// No enumeration by timing (CONTRACT section 14): POST /auth/password-reset/request for
// addresses with an account and without one, through the compiled binary at its defaults
// (SQLite, --sync full), interleaved, N of each; the medians must lie within 10 % of each
// other. Every request names a new address and comes from a new client (X-Forwarded-For with
// --trust-proxy), so the per-address and per-client limits never answer instead.
// Usage: bun bench/mail-timing.ts [--requests 200] [--no-build]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median, spawnServer } from './lib/process'
import { BINARY, buildBinary } from './lib/roster'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    requests: { type: 'string', default: '200' },
    'no-build': { type: 'boolean', default: false },
  },
})
const count = Number(args.requests)
buildBinary(args['no-build'])

const dir = mkdtempSync(join(tmpdir(), 'roster-mail-timing-'))
const csv = [
  'name,email',
  ...Array.from({ length: count }, (_, i) => `User ${i},known${i}@example.com`),
]
await Bun.write(join(dir, 'users.csv'), `${csv.join('\n')}\n`)
const imported = Bun.spawnSync([
  BINARY,
  'users',
  'import',
  join(dir, 'users.csv'),
  '--format',
  'csv',
  '--data-dir',
  dir,
])
if (imported.exitCode !== 0) throw new Error(`import failed: ${imported.stderr}`)
const server = await spawnServer([
  BINARY,
  'serve',
  '--port',
  '0',
  '--data-dir',
  dir,
  '--trust-proxy',
  '--log-file',
  join(dir, 'access.log'),
])
try {
  const ask = async (email: string, client: number) => {
    const started = performance.now()
    const response = await fetch(`${server.url}/auth/password-reset/request`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}`,
      },
      body: JSON.stringify({ email }),
    })
    await response.text()
    if (response.status !== 202) throw new Error(`${email}: ${response.status}`)
    return performance.now() - started
  }
  // A warm-up of each kind, not counted.
  for (let i = 0; i < 20; i++) {
    await ask(`warm${i}@example.com`, 100_000 + i)
  }
  const known: number[] = []
  const unknown: number[] = []
  for (let i = 0; i < count; i++) {
    // Alternating which goes first, so neither always follows the other's commit.
    const pair = i % 2 === 0 ? ['known', 'unknown'] : ['unknown', 'known']
    for (const kind of pair) {
      const ms = await ask(`${kind}${i}@example.com`, i * 2 + (kind === 'known' ? 0 : 1))
      ;(kind === 'known' ? known : unknown).push(ms)
    }
  }
  const a = median(known)
  const b = median(unknown)
  const gap = Math.abs(a - b) / Math.min(a, b)
  console.log(
    `password-reset/request, ${count} of each: known ${a.toFixed(3)} ms, unknown ${b.toFixed(3)} ms (medians), gap ${(gap * 100).toFixed(1)} %: ${gap <= 0.1 ? 'within' : 'OVER'} 10 %`,
  )
  if (gap > 0.1) process.exitCode = 1
} finally {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
}
