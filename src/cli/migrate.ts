import { loadConfig } from '../config'
import { makeDeps } from '../deps'
import { createLogger } from '../log'
import { configFlags, databaseFlags, parseFlags, renderFlags } from './args'

const FLAGS = databaseFlags()

export const MIGRATE_HELP = () => `Usage: roster migrate [flags]

Applies the migrations embedded in this binary to the database, brings the search index up to
date (SQLite: a server indexes new users when idle, and searches are exact meanwhile, only
slower), and exits. roster serve migrates at start, so this is only needed ahead of time.

${renderFlags(FLAGS)}`

/** `roster migrate`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('migrate', args, FLAGS)
  if (flags.help) {
    console.log(MIGRATE_HELP())
    return 0
  }
  const config = loadConfig(configFlags(flags), env)
  const deps = await makeDeps(config, createLogger())
  try {
    await deps.catchUp()
  } finally {
    await deps.close()
  }
  const { database } = deps.describe
  if (deps.migrated.length === 0) console.log(`database ${database} was already up to date`)
  else console.log(`applied ${deps.migrated.join(', ')} to database ${database}`)
  return 0
}
