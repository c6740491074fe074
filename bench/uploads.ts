// Uploads benchmark, against the compiled binary, in one run:
//  1. a 1 GiB raw upload and a 1 GiB multipart upload (two 512 MiB parts): throughput and the
//     server's peak RSS, against a minimal Bun.serve route streaming the body to a file;
//  2. 8 concurrent 100 MiB uploads while /health is probed every 10 ms: its p99.
// Usage: bun bench/uploads.ts [--no-build] [--keep-files]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { median, spawnServer } from './lib/process'
import { buildBinary, ROOT, startRoster } from './lib/roster'
import { pinned } from './lib/wrk'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: { 'no-build': { type: 'boolean', default: false } },
})
const GIB = 1024 ** 3
const MIB = 1024 ** 2

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
}

async function makeFile(path: string, bytes: number): Promise<void> {
  const proc = Bun.spawn(['head', '-c', String(bytes), '/dev/urandom'], { stdout: Bun.file(path) })
  await proc.exited
}

/** One upload with curl (streams from disk), pinned to CPU 1; seconds taken and HTTP status. */
async function curlUpload(args: string[]): Promise<{ seconds: number; status: number }> {
  const started = performance.now()
  const proc = Bun.spawn(
    pinned(1, ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', ...args]),
    { stdout: 'pipe' },
  )
  const status = Number(await new Response(proc.stdout).text())
  await proc.exited
  return { seconds: (performance.now() - started) / 1000, status }
}

async function main() {
  buildBinary(args['no-build'])
  const dir = mkdtempSync(join(tmpdir(), 'roster-bench-upload-'))
  try {
    const big = join(dir, 'big.bin')
    const half = join(dir, 'half.bin')
    const hundred = join(dir, 'hundred.bin')
    await makeFile(big, GIB)
    await makeFile(half, 512 * MIB)
    await makeFile(hundred, 100 * MIB)
    const rows: string[] = []

    const roster = async () =>
      startRoster({
        dataDir: join(dir, `roster-${Date.now()}`),
        logFile: join(dir, 'access.log'),
        args: ['--max-file-size', '1GiB', '--max-upload-size', '1GiB'],
      })
    const baseline = async () =>
      spawnServer(pinned(0, [process.execPath, join(ROOT, 'bench/upload-baseline.ts'), dir]))

    const results: Record<string, { seconds: number; rss: number }> = {}
    for (const [name, start, args2] of [
      [
        'baseline raw',
        baseline,
        (url: string) => [
          '-X',
          'POST',
          '-T',
          big,
          '-H',
          'content-type: application/octet-stream',
          `${url}/`,
        ],
      ],
      [
        'roster raw',
        roster,
        (url: string) => [
          '-X',
          'POST',
          '-T',
          big,
          '-H',
          'content-type: application/octet-stream',
          `${url}/upload?filename=big.bin`,
        ],
      ],
      [
        'roster multipart',
        roster,
        (url: string) => ['-F', `a=@${half}`, '-F', `b=@${half}`, `${url}/upload`],
      ],
    ] as const) {
      const server = await start()
      const upload = await curlUpload(args2(server.url))
      if (upload.status !== 201) throw new Error(`${name}: HTTP ${upload.status}`)
      results[name] = { seconds: upload.seconds, rss: peakRssMb(server.proc.pid) }
      await server.stop()
      console.error(
        `${name}: ${(GIB / MIB / upload.seconds).toFixed(0)} MiB/s, peak RSS ${results[name].rss.toFixed(0)} MB`,
      )
    }
    const mibps = (name: string) => GIB / MIB / (results[name]?.seconds ?? 1)
    rows.push('| upload (1 GiB) | MiB/s | server peak RSS (VmHWM) |', '|---|---|---|')
    for (const name of Object.keys(results))
      rows.push(`| ${name} | ${mibps(name).toFixed(0)} | ${results[name]?.rss.toFixed(0)} MB |`)
    rows.push(
      '',
      `roster raw ÷ baseline: **${(mibps('roster raw') / mibps('baseline raw')).toFixed(2)}×**; roster multipart ÷ baseline: **${(mibps('roster multipart') / mibps('baseline raw')).toFixed(2)}×** (target ≥ 0.5×; peak RSS target < 120 MB)`,
    )

    const server = await roster()
    const latencies: number[] = []
    let probing = true
    const prober = (async () => {
      while (probing) {
        const started = performance.now()
        const response = await fetch(`${server.url}/health`)
        await response.arrayBuffer()
        latencies.push(performance.now() - started)
        await Bun.sleep(10)
      }
    })()
    const uploads = await Promise.all(
      Array.from({ length: 8 }, () =>
        curlUpload([
          '-X',
          'POST',
          '-T',
          hundred,
          '-H',
          'content-type: application/octet-stream',
          `${server.url}/upload`,
        ]),
      ),
    )
    probing = false
    await prober
    const rss = peakRssMb(server.proc.pid)
    await server.stop()
    latencies.sort((a, b) => a - b)
    const p99 =
      latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? Number.NaN
    rows.push(
      '',
      `8 concurrent 100 MiB uploads: ${uploads.filter((u) => u.status === 201).length}/8 stored in ${Math.max(...uploads.map((u) => u.seconds)).toFixed(1)} s; /health during them: ${latencies.length} probes, median ${median(latencies).toFixed(1)} ms, **p99 ${p99.toFixed(1)} ms** (target < 50 ms); server peak RSS ${rss.toFixed(0)} MB`,
    )
    console.log(rows.join('\n'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
