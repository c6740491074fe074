import { ConfigError, loadConfig } from '../config'
import { parseRowId } from '../db/row-id'
import { makeDeps } from '../deps'
import { createLogger } from '../log'
import { configFlags, databaseFlags, type FlagSpec, parseFlags, renderFlags } from './args'

const NAME_FLAG: FlagSpec = {
  flag: 'name',
  env: [],
  defaultText: '(required)',
  help: 'a name to tell the key apart',
}
const JSON_FLAG: FlagSpec = {
  flag: 'json',
  env: [],
  defaultText: 'false',
  help: 'print JSON',
  boolean: true,
}

export const KEYS_HELP = () => `Usage: roster keys create --name NAME
       roster keys list [--json]
       roster keys revoke ID

Manages API keys directly in the database (the server may be running).
create prints the new key alone on stdout (so KEY=$(roster keys create --name ci) works) and
its id on stderr; the key is not shown again. revoke refuses the key from the next request on.

${renderFlags([NAME_FLAG, JSON_FLAG, ...databaseFlags()])}`

/** `roster keys …`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [action, ...rest] = args
  if (action === undefined || action === '--help' || action === '-h') {
    console.log(KEYS_HELP())
    return action === undefined ? 2 : 0
  }
  const specs = [...databaseFlags(), NAME_FLAG, JSON_FLAG]
  const { flags, positionals } = parseFlags('keys', rest, specs, action === 'revoke' ? 1 : 0)
  if (flags.help) {
    console.log(KEYS_HELP())
    return 0
  }
  const { name, json, ...serverFlags } = configFlags(flags)
  const deps = await makeDeps(loadConfig(serverFlags, env), createLogger())
  try {
    switch (action) {
      case 'create': {
        if (typeof name !== 'string' || name.trim() === '')
          throw new ConfigError('keys create needs --name')
        const key = await deps.apiKeys.create(name.trim())
        console.error(
          `created API key ${key.id} (${key.prefix}…) named ${JSON.stringify(key.name)}`,
        )
        console.log(key.key)
        return 0
      }
      case 'list': {
        const { data } = await deps.apiKeys.list({ limit: Number.MAX_SAFE_INTEGER, offset: 0 })
        if (json === true) console.log(JSON.stringify(data, null, 2))
        else printTable(data)
        return 0
      }
      case 'revoke': {
        const id = parseRowId(positionals[0])
        if (id === null) throw new ConfigError('keys revoke needs a key id')
        if (!(await deps.apiKeys.revoke(id))) {
          console.error(`roster: no active API key with id ${id}`)
          return 1
        }
        console.error(`revoked API key ${id}`)
        return 0
      }
      default:
        throw new ConfigError(
          `unknown keys action ${JSON.stringify(action)} (create, list or revoke)`,
        )
    }
  } finally {
    await deps.close()
  }
}

function printTable(
  rows: {
    id: number
    name: string
    prefix: string
    created_at: string
    last_used_at: string | null
  }[],
) {
  const table = [['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED']].concat(
    rows.map((row) => [
      String(row.id),
      row.name,
      `${row.prefix}…`,
      row.created_at,
      row.last_used_at ?? 'never',
    ]),
  )
  const widths =
    table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? '').length))) ?? []
  for (const row of table)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
}
