import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')

describe('the diagnostics logger', () => {
  test('writes each line to stderr as JSON at once: a process that exits next still has it', () => {
    const script = `import { createLogger } from './src/log'
      createLogger().warn('disk nearly full', { free_bytes: 12 })
      process.exit(3)`
    const run = Bun.spawnSync([process.execPath, '-e', script], { cwd: root, stderr: 'pipe' })
    expect(run.exitCode).toBe(3)
    const line = JSON.parse(run.stderr.toString())
    expect(line).toMatchObject({ level: 'warn', message: 'disk nearly full', free_bytes: 12 })
    expect(Number.isNaN(Date.parse(line.time))).toBe(false)
  })
})
