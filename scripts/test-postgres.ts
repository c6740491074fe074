// npm run test:postgres: the whole suite on PostgreSQL and S3. Starts a throwaway PostgreSQL
// (Debian's `postgresql`: initdb and pg_ctl in a temp dir on a free loopback port), or uses
// ROSTER_TEST_DATABASE_URL when it is set, and an s3rver (or ROSTER_TEST_S3_ENDPOINT), then runs every test file with
// ROSTER_TEST_BACKEND=postgres (each test on a fresh database), except the few about the
// embedded SQLite file itself, which it names. Without PostgreSQL it fails with one line saying
// what to install; it never skips. Given file or folder arguments, it runs those instead.
import { Glob } from 'bun'
import { MISSING_POSTGRES, startPostgres } from './postgres-server'
import { MISSING_S3RVER, startS3 } from './s3-server'

/** Not run on PostgreSQL, and why: each is about the embedded database or the binary's files. */
export const SQLITE_ONLY: Record<string, string> = {
  'test/db/backup.test.ts':
    'roster backup copies the SQLite file (on PostgreSQL it refuses: pg_dump)',
  'test/db/migrate.test.ts': "SQLite's migrations (PostgreSQL's: test/postgres/migrate.test.ts)",
  'test/db/write-queue.test.ts': "SQLite's group commit",
  'test/users/group-commit.test.ts': "SQLite's group commit",
}

/** Run by their own scripts: the compiled binary (npm test), releases, the browser. */
const ELSEWHERE = ['test/bin/', 'test/release/', 'test/browser/']

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
let s3: Awaited<ReturnType<typeof startS3>> | null = null
const givenS3 = process.env.ROSTER_TEST_S3_ENDPOINT
if (givenS3 === undefined || givenS3 === '') {
  try {
    s3 = await startS3({ reapWith: process.pid })
  } catch (error) {
    server?.stop()
    console.error((error as Error).message.split('\n')[0] ?? MISSING_S3RVER)
    process.exit(1)
  }
}
const s3Endpoint = s3?.endpoint ?? (givenS3 as string)
const args = process.argv.slice(2)
const paths = args.filter((arg) => !arg.startsWith('-'))
const options = args.filter((arg) => arg.startsWith('-'))
let files = paths
if (paths.length === 0) {
  files = [...new Glob('test/**/*.test.ts').scanSync('.')]
    .filter((file) => !(file in SQLITE_ONLY) && !ELSEWHERE.some((dir) => file.startsWith(dir)))
    .sort()
  console.error(
    `test:postgres: ${files.length} files on PostgreSQL; not here: ${Object.entries(SQLITE_ONLY)
      .map(([file, why]) => `${file} (${why})`)
      .join('; ')}`,
  )
}
const run = Bun.spawn(
  [process.execPath, 'test', '--timeout', '60000', ...options, ...files.map((file) => `./${file}`)],
  {
    stdio: ['inherit', 'inherit', 'inherit'],
    env: {
      ...process.env,
      ROSTER_TEST_DATABASE_URL: url,
      ROSTER_TEST_S3_ENDPOINT: s3Endpoint,
      ROSTER_TEST_BACKEND: 'postgres',
    },
  },
)
const status = await run.exited
server?.stop()
s3?.remove()
process.exit(status)
