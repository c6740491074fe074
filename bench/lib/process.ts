import { readdirSync, readFileSync } from 'node:fs'
import type { Subprocess } from 'bun'

export interface Spawned {
  proc: Subprocess
  url: string
  stop(): Promise<void>
}

/** Starts a server that prints `listening on http://…` (stdout or stderr) and waits for it. */
export async function spawnServer(
  command: string[],
  env: Record<string, string> = {},
): Promise<Spawned> {
  const proc = Bun.spawn(command, {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, ...env },
  })
  const url = await new Promise<string>((resolve, reject) => {
    let seen = ''
    const timer = setTimeout(
      () => reject(new Error(`no listening line from ${command.join(' ')}: ${seen}`)),
      15_000,
    )
    for (const stream of [proc.stdout, proc.stderr]) {
      void (async () => {
        const decoder = new TextDecoder()
        for await (const chunk of stream as ReadableStream<Uint8Array>) {
          seen += decoder.decode(chunk)
          const match = /listening on (http:\/\/[0-9.:[\]a-z]+)/.exec(seen)
          if (match) {
            clearTimeout(timer)
            resolve((match[1] as string).replace(/\/$/, ''))
          }
        }
      })()
    }
  })
  return {
    proc,
    url,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

export async function waitForHealth(url: string, intervalMs: number): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return
    } catch {}
    await Bun.sleep(intervalMs)
  }
  throw new Error(`${url} did not become healthy`)
}

/** Resident set size of a process in KiB (from /proc). */
export function readRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  return cpuOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
}

/**
 * CPU seconds used so far by every live process whose command is `command` (PostgreSQL's
 * backends, say: one process per connection, plus its writers).
 */
export function cpuSecondsOfCommand(command: string): number {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (stat.includes(`(${command})`)) total += cpuOfStat(stat)
    } catch {} // exited meanwhile
  }
  return total
}

function cpuOfStat(stat: string): number {
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}
