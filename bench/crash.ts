// The crash test at a larger scale: SIGKILL under concurrent writes, --trials times (200 by
// default), against the compiled binary. Same test as CI runs 20 times (test/bin/crash.test.ts).
// Usage: bun bench/crash.ts [--trials 200] [--seed N] [--no-build]
import { join } from 'node:path'
import { parseArgs } from 'node:util'

const root = join(import.meta.dir, '..')
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    trials: { type: 'string', default: '200' },
    seed: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
})
if (!args['no-build'])
  Bun.spawnSync([process.execPath, 'run', 'build'], { cwd: root, stdout: 'ignore' })
const started = performance.now()
const run = Bun.spawnSync(
  [process.execPath, 'test', '--timeout', '0', 'test/bin/crash.test.ts', '-t', 'SIGKILL'],
  {
    cwd: root,
    env: {
      ...process.env,
      ROSTER_CRASH_TRIALS: args.trials,
      ...(args.seed === undefined ? {} : { ROSTER_CRASH_SEED: args.seed }),
    },
    stdout: 'inherit',
    stderr: 'inherit',
  },
)
const seconds = ((performance.now() - started) / 1000).toFixed(1)
console.log(
  `${args.trials} SIGKILL trials: ${run.exitCode === 0 ? 'every acknowledged write survived, no refused write landed' : 'FAILED (see above)'} (${seconds} s)`,
)
process.exitCode = run.exitCode ?? 1
