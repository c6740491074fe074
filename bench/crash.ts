import { parseArgs } from 'node:util'
import { buildBinary, ROOT } from './lib/roster'

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    trials: { type: 'string', default: '200' },
    seed: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
})
buildBinary(args['no-build'])
const started = performance.now()
const run = Bun.spawnSync(
  [process.execPath, 'test', '--timeout', '0', 'test/bin/crash.test.ts', '-t', 'SIGKILL'],
  {
    cwd: ROOT,
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
