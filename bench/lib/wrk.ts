import { join } from 'node:path'

export interface WrkResult {
  rps: number
  p50Ms: number
  p99Ms: number
  requests: number
  errors: number
}

/** wrk from Debian's packages; installed on first use when we may (root). */
export async function ensureWrk(): Promise<void> {
  if (Bun.which('wrk')) return
  if (process.getuid?.() !== 0) throw new Error('wrk is missing: apt-get install wrk (as root)')
  console.error('installing wrk from Debian packages…')
  for (const command of [
    ['apt-get', 'update', '-qq'],
    ['apt-get', 'install', '-y', '-qq', 'wrk'],
  ]) {
    const result = Bun.spawnSync(command, { stdout: 'ignore', stderr: 'inherit' })
    if (result.exitCode !== 0) throw new Error(`${command.join(' ')} failed`)
  }
}

/** Prefixes a command with taskset so it runs on one CPU (when taskset exists). */
export function pinned(cpu: number, command: string[]): string[] {
  return Bun.which('taskset') ? ['taskset', '-c', String(cpu), ...command] : command
}

export async function runWrk(options: {
  url: string
  path: string
  script?: string
  duration: number
  connections: number
  seeded: number
  /** More wrk arguments, e.g. ['-H', 'Authorization: …']. */
  extra?: string[]
}): Promise<WrkResult> {
  const command = pinned(1, [
    'wrk',
    '-t1',
    `-c${options.connections}`,
    `-d${options.duration}s`,
    '--latency',
    ...(options.script ? ['-s', join(import.meta.dir, '../wrk', options.script)] : []),
    ...(options.extra ?? []),
    `${options.url}${options.path}`,
  ])
  const proc = Bun.spawn(command, {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, SEEDED: String(options.seeded) },
  })
  const output = await new Response(proc.stdout).text()
  await proc.exited
  return parseWrk(output)
}

export function parseWrk(output: string): WrkResult {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0)
  const requests = Number(/(\d+) requests in/.exec(output)?.[1] ?? 0)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  const socketErrors = socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0
  return {
    rps,
    requests,
    errors: non2xx + socketErrors,
    p50Ms: latencyMs(output, '50%'),
    p99Ms: latencyMs(output, '99%'),
  }
}

function latencyMs(output: string, percentile: string): number {
  const match = new RegExp(`${percentile}\\s+([\\d.]+)(us|ms|s)`).exec(output)
  if (!match) return Number.NaN
  const value = Number(match[1])
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value
}
