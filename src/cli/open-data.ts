import { existsSync } from 'node:fs'
import { userInfo } from 'node:os'
import { resolve } from 'node:path'
import { type AuditSource, commandLine } from '../audit/events'
import { sqliteFilePath } from '../backends/sqlite/connection'
import { loadConfig } from '../config'
import { type Deps, makeDeps } from '../deps'
import { createLogger } from '../log'

/** A command's changes in the audit log: the CLI, run by the operating system's user. */
export function commandSource(): AuditSource {
  let who: string | null = null
  try {
    who = userInfo().username
  } catch {
    // A user without a name (a container's numeric uid): the events say only "cli".
  }
  return commandLine(who)
}

/**
 * Opens the database a command works on. When the embedded database does not exist yet, the
 * command makes a new, empty one, and says so on stderr: run in another directory than the
 * server, or without its --data-dir, a command would otherwise work on a database nobody serves
 * (a key made there is refused by the server) without a word.
 */
export async function openCommandData(
  serverFlags: Record<string, string | boolean>,
  env: Record<string, string | undefined>,
): Promise<Deps> {
  const config = loadConfig(serverFlags, env)
  const dbPath = resolve(sqliteFilePath(config.dataDir))
  const fresh = config.databaseUrl === null && !existsSync(dbPath)
  const deps = await makeDeps(config, createLogger())
  if (fresh) {
    console.error(
      `roster: there was no database at ${dbPath}; made a new, empty one (the server's is in the folder roster serve runs in, or its --data-dir)`,
    )
  }
  return deps
}
