import { ConfigError, loadConfig } from '../config'
import { type Deps, makeDeps } from '../deps'
import { createLogger } from '../log'
import type { TransferFormat } from '../users/transfer'
import type { FlagSpec } from './args'

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
  const deps = await makeDeps(loadConfig(serverFlags, env), createLogger())
  try {
    return await work(deps)
  } finally {
    await deps.close()
  }
}
