import { join } from 'node:path'
import { type Spawned, spawnServer } from './process'
import { pinned } from './wrk'

export const ROOT = join(import.meta.dir, '../..')
export const BINARY = join(ROOT, 'dist/roster')

/** Builds dist/roster from the working tree (unless the run says --no-build). */
export function buildBinary(skip = false): void {
  if (skip) return
  const build = Bun.spawnSync([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'ignore' })
  if (build.exitCode !== 0) throw new Error(`bun run build failed: ${build.stderr.toString()}`)
}

/** The load generator runs on CPU 1; the servers it measures on CPU 0 (see pinned). */
export function pinLoadGenerator(): void {
  Bun.spawnSync(['taskset', '-p', '-c', '1', String(process.pid)], {
    stdout: 'ignore',
    stderr: 'ignore',
  })
}

/** `roster serve` on a free port, pinned to CPU 0, with the access log written to a file. */
export function startRoster(options: {
  dataDir: string
  logFile: string
  args?: string[]
  env?: Record<string, string>
}): Promise<Spawned> {
  return spawnServer(
    pinned(0, [
      BINARY,
      'serve',
      '--port',
      '0',
      '--data-dir',
      options.dataDir,
      '--log-file',
      options.logFile,
      ...(options.args ?? []),
    ]),
    options.env,
  )
}
