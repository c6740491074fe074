import { type CopyProgress, copyRoster } from '../backends/copy'
import { redactUrl } from '../backends/postgres/connection'
import { ConfigError, loadConfig } from '../config'
import { configFlags, parseFlags, renderFlags, serveFlags } from './args'
import { formatBytes } from './format'
import { Progress } from './progress'

const FLAGS = [
  ...serveFlags('data-dir'),
  {
    flag: 'to',
    env: [],
    defaultText: '(required)',
    help: 'postgres://user:password@host:port/database: the empty PostgreSQL database to fill',
  },
  ...serveFlags('storage', 'storage-timeout'),
]

export const COPY_HELP =
  () => `Usage: roster copy --to postgres://… [--storage s3://BUCKET[/PREFIX]] [flags]

Copies the SQLite roster in the data directory (every table, and with --storage every uploaded
file) into an empty PostgreSQL database and an empty bucket prefix, then checks every table's
row count and every file's SHA-256 in the target. Refuses a target that is not empty. The rows
go in one transaction: a copy that fails leaves the database empty and deletes the objects it
wrote. A copy that was killed is finished by running the same command again: it deletes what
the killed run left in the bucket and copies again, or only verifies if the rows got through. It reads one snapshot of the source, so a server may keep running, but writes made
after the copy started stay behind: stop the server first to move house.

Without --storage the files stay in DATA_DIR/uploads (checked, not copied): serve PostgreSQL
with the same --data-dir. The bucket's endpoint and credentials come from S3_* or AWS_*.

${renderFlags(FLAGS)}`

/** `roster copy --to postgres://…`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('copy', args, FLAGS)
  if (flags.help) {
    console.log(COPY_HELP())
    return 0
  }
  const to = flags.to
  if (typeof to !== 'string' || to === '') {
    throw new ConfigError('copy needs --to postgres://… (see roster copy --help)')
  }
  const { to: _, ...rest } = configFlags(flags)
  // The target is checked like --database-url; the source is the data directory's SQLite file.
  const target = loadConfig({ ...rest, 'database-url': to }, env)
  const source = loadConfig(rest, { ...env, ROSTER_DATABASE_URL: undefined })
  console.error(
    `copying ${source.dataDir} to ${redactUrl(to)}${target.storage === null ? '' : ` and s3://${target.storage.bucket}/${target.storage.prefix}`}`,
  )
  const report = await copyRoster(
    { dataDir: source.dataDir },
    { databaseUrl: to, storage: target.storage, storageTimeout: target.storageTimeout, env },
    progressOnStderr(),
  )
  const tables = Object.entries(report.tables)
    .map(([table, rows]) => `${table} ${rows}`)
    .join(', ')
  if (report.leftoversRemoved > 0) {
    console.error(`removed ${report.leftoversRemoved} object(s) an interrupted copy left`)
  }
  const what = report.alreadyCopied
    ? 'the target already holds this copy; verified'
    : 'copied and verified'
  console.log(
    `${what}: ${tables}; ${report.files} file(s), ${formatBytes(report.bytes)}${target.storage === null ? ' (left in the data directory, checked)' : ''}`,
  )
  return 0
}

function progressOnStderr(): CopyProgress {
  const wrap = (progress: Progress, units: (n: number) => [number, number]) => ({
    advance: (n: number) => progress.advance(...units(n)),
    finish: () => progress.finish(),
  })
  return {
    rows: (total) => wrap(new Progress('copying rows', total), (n) => [n, n]),
    files: (totalBytes) =>
      wrap(new Progress('copying files', totalBytes, process.stderr, 'files'), (bytes) => [
        bytes,
        1,
      ]),
  }
}
