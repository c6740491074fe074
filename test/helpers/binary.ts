import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

/** The compiled binary; `bun run test` builds it first. */
export const BINARY = join(import.meta.dir, '../../dist/roster')

export function requireBinary(): void {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run \`bun run build\` first`)
}

/** An environment with nothing roster reads, so tests decide every setting. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    const readByRoster = /^(ROSTER_|S3_|AWS_)/.test(key) || key === 'PORT'
    if (value !== undefined && !readByRoster) env[key] = value
  }
  return { ...env, ...extra }
}

/** Runs the binary to completion. */
export function runBinary(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; stdin?: string } = {},
) {
  return runCommand([BINARY, ...args], options)
}

/** Runs a command to completion (in a clean environment unless told otherwise). */
export async function runCommand(
  command: string[],
  options: { cwd?: string; env?: Record<string, string>; stdin?: string } = {},
) {
  const proc = Bun.spawn(command, {
    cwd: options.cwd,
    env: options.env ?? cleanEnv(),
    stdin: options.stdin === undefined ? 'ignore' : new TextEncoder().encode(options.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { code, stdout, stderr }
}

export interface RunningBinary {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  /** stderr lines seen so far (startup line, warnings). */
  stderr: string[]
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** Starts `roster serve` on a free port and waits for its startup line. */
export async function startBinary(
  args: string[],
  options: {
    cwd?: string
    env?: Record<string, string>
    /** The command that runs roster (default: dist/roster; a release artifact under qemu, say). */
    executable?: string[]
    /** How long to wait for the startup line (emulated binaries start slowly). */
    startTimeoutMs?: number
    /** A fixed port (an instance restarted behind a balancer comes back where it was). */
    port?: number
  } = {},
): Promise<RunningBinary> {
  const executable = options.executable ?? [BINARY]
  const port = String(options.port ?? 0)
  const proc = Bun.spawn([...executable, 'serve', '--port', port, ...args], {
    cwd: options.cwd,
    env: options.env ?? cleanEnv(),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const stderr: string[] = []
  const reader = proc.stderr.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  let url: string | null = null
  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000)
  while (url === null) {
    if (Date.now() > deadline) throw new Error(`roster did not start: ${stderr.join('\n')}`)
    const { value, done } = await reader.read()
    if (done) throw new Error(`roster exited before listening: ${stderr.join('\n')}${buffered}`)
    buffered += decoder.decode(value, { stream: true })
    let newline = buffered.indexOf('\n')
    while (newline !== -1) {
      const line = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      stderr.push(line)
      url ??= /listening on (http:\/\/[^"\s;]+)/.exec(line)?.[1] ?? null
      newline = buffered.indexOf('\n')
    }
  }
  // Keep draining stderr so the child never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      stderr.push(...decoder.decode(value).split('\n').filter(Boolean))
    }
  })()
  return {
    proc,
    url,
    stderr,
    async stop(signal = 'SIGTERM') {
      proc.kill(signal)
      return await proc.exited
    },
  }
}

/** Waits (up to `timeoutMs`) for a stderr line containing `text`: warnings follow the startup line. */
export async function waitForStderr(
  server: RunningBinary,
  text: string,
  timeoutMs = 5000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const line = server.stderr.find((candidate) => candidate.includes(text))
    if (line !== undefined) return line
    if (Date.now() > deadline) throw new Error(`no stderr line with ${JSON.stringify(text)}`)
    await Bun.sleep(10)
  }
}
