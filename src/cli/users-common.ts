import { ConfigError } from '../config'
import type { Deps } from '../deps'
import { AppError } from '../errors/errors'
import { toView, type UserRecord } from '../users/records'
import type { TransferFormat } from '../users/transfer'
import type { FlagSpec } from './args'
import { openCommandData } from './open-data'

// What the `roster users` commands share.

export const FORMAT_FLAG: FlagSpec = {
  flag: 'format',
  env: [],
  defaultText: 'jsonl',
  help: 'jsonl (one JSON object per line) or csv (with a header row)',
}

export function parseFormat(value: string | boolean | undefined, fallback: TransferFormat) {
  if (value === undefined) return fallback
  if (value === 'jsonl' || value === 'csv') return value
  throw new ConfigError(
    `invalid value for --format: ${JSON.stringify(value)} (expected jsonl or csv)`,
  )
}

/** Opens the data directory for one command and closes it after, whatever happens. */
export async function withDeps(
  serverFlags: Record<string, string | boolean>,
  env: Record<string, string | undefined>,
  work: (deps: Deps) => Promise<number>,
): Promise<number> {
  const deps = await openCommandData(serverFlags, env)
  try {
    return await work(deps)
  } finally {
    await deps.close()
  }
}

/**
 * Prints the user a write made as one JSON line (exit 0); a refusal the API would answer with
 * (a taken email, the last admin) is one `roster:` line on stderr and exit 1.
 */
export async function printWrittenUser(write: () => Promise<UserRecord>): Promise<number> {
  try {
    console.log(JSON.stringify(toView(await write())))
    return 0
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    console.error(`roster: ${error.message}`)
    return 1
  }
}
