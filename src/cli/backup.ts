import { resolve } from 'node:path'
import { backupDatabase } from '../backends/sqlite/backup'
import { sqliteFilePath } from '../backends/sqlite/connection'
import { ConfigError, loadConfig } from '../config'
import { configFlags, databaseFlags, parseFlags, renderFlags } from './args'
import { formatBytes } from './format'

const FLAGS = databaseFlags()

export const BACKUP_HELP = () => `Usage: roster backup FILE [flags]

Writes a consistent copy of the database to FILE while the server keeps running (it reads
one snapshot; writes go on meanwhile). Refuses to overwrite FILE; makes its folder if missing.
The copy is checked before it is put in place; its size and the time taken are printed.

To restore: stop roster, replace DATA_DIR/roster.db with the copy (and delete roster.db-wal and
roster.db-shm if present), start roster. Uploaded files live in DATA_DIR/uploads/ and are not
in the database: copy that directory too.

On PostgreSQL (--database-url) this command refuses: back up with pg_dump, and the bucket
with its own versioning or replication.

${renderFlags(FLAGS)}`

/** `roster backup FILE`. */
export function run(args: string[], env: Record<string, string | undefined>): number {
  const { flags, positionals } = parseFlags('backup', args, FLAGS, 1)
  if (flags.help) {
    console.log(BACKUP_HELP())
    return 0
  }
  const [target] = positionals
  if (target === undefined) throw new ConfigError('backup needs a FILE (see roster backup --help)')
  const config = loadConfig(configFlags(flags), env)
  if (config.databaseUrl !== null) {
    throw new ConfigError(
      'roster backup copies the embedded SQLite database; on PostgreSQL use pg_dump (for example pg_dump --format=custom --file=roster.dump "$ROSTER_DATABASE_URL")',
    )
  }
  const dbPath = resolve(sqliteFilePath(config.dataDir))
  const destination = resolve(target)
  const { bytes, ms } = backupDatabase(dbPath, destination)
  console.log(
    `backed up ${dbPath} to ${destination}: ${formatBytes(bytes)} in ${(ms / 1000).toFixed(2)} s`,
  )
  return 0
}
