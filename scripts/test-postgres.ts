// npm run test:postgres: starts a throwaway PostgreSQL (Debian's `postgresql`: initdb and pg_ctl
// in a temp dir on a free loopback port), or uses ROSTER_TEST_DATABASE_URL when it is set, and
// runs the PostgreSQL suites (test/postgres) against it. Without PostgreSQL it fails with one
// line saying what to install; it never skips. Arguments are passed on to `bun test`.
import { MISSING_POSTGRES, startPostgres } from './postgres-server'

const given = process.env.ROSTER_TEST_DATABASE_URL
let server: Awaited<ReturnType<typeof startPostgres>> | null = null
if (given === undefined || given === '') {
  try {
    server = await startPostgres({ reapWith: process.pid })
  } catch (error) {
    console.error((error as Error).message.split('\n')[0] ?? MISSING_POSTGRES)
    process.exit(1)
  }
}
const url = server?.url ?? (given as string)
const run = Bun.spawn(
  [process.execPath, 'test', '--timeout', '60000', ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/postgres'])],
  {
    stdio: ['inherit', 'inherit', 'inherit'],
    env: { ...process.env, ROSTER_TEST_DATABASE_URL: url },
  },
)
const status = await run.exited
server?.stop()
process.exit(status)
