// What idle subscribers of GET /events cost: the compiled binary's CPU over a quiet minute with
// no subscriber, then with 100 streams open (each a key's fetch, read as it comes), then after
// a burst of changes they all receive. Usage: bun bench/feed-idle.ts [--seconds 60] [--subscribers 100]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSeconds, readRss, spawnServer } from './lib/process'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    seconds: { type: 'string', default: '60' },
    subscribers: { type: 'string', default: '100' },
  },
})
const seconds = Number(args.seconds)
const count = Number(args.subscribers)
const root = join(import.meta.dir, '..')
const binary = join(root, 'dist/roster')
const dir = mkdtempSync(join(tmpdir(), 'roster-feed-idle-'))

const key = (
  await new Response(
    Bun.spawn([binary, 'keys', 'create', '--name', 'feed', '--data-dir', dir], {
      stdout: 'pipe',
      stderr: 'ignore',
    }).stdout,
  ).text()
).trim()
const server = await spawnServer([binary, 'serve', '--port', '0', '--data-dir', dir])

/** CPU milliseconds the server used over `ms` of wall time. */
async function cpuOver(ms: number): Promise<number> {
  const before = cpuSeconds(server.proc.pid)
  await Bun.sleep(ms)
  return (cpuSeconds(server.proc.pid) - before) * 1000
}

try {
  await Bun.sleep(2000)
  const quiet = await cpuOver(seconds * 1000)
  const streams = new AbortController()
  let received = 0
  for (let i = 0; i < count; i++) {
    void (async () => {
      const response = await fetch(`${server.url}/events`, {
        headers: { 'x-api-key': key },
        signal: streams.signal,
      })
      for await (const chunk of response.body as ReadableStream<Uint8Array>) {
        received += new TextDecoder().decode(chunk).split('\ndata: ').length - 1
      }
    })().catch(() => {})
  }
  await Bun.sleep(2000)
  const rssOpen = readRss(server.proc.pid) / 1024
  const idle = await cpuOver(seconds * 1000)
  for (let n = 0; n < 100; n++) {
    await fetch(`${server.url}/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Feed ${n}`, email: `feed${n}@example.com` }),
    })
  }
  await Bun.sleep(2000)
  streams.abort()
  const perMinute = (ms: number) => ((ms / seconds) * 60).toFixed(0)
  console.log(`| subscribers | CPU over ${seconds} s | CPU per minute |`)
  console.log('|---|---|---|')
  console.log(`| none | ${quiet.toFixed(0)} ms | ${perMinute(quiet)} ms |`)
  console.log(`| ${count} idle | ${idle.toFixed(0)} ms | ${perMinute(idle)} ms |`)
  console.log(
    `\nRSS with ${count} streams open: ${rssOpen.toFixed(1)} MB; then 100 changes reached them as ${received} events (${count * 100} expected)`,
  )
} finally {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
}
