import { ALL_SCOPES, type Grant, SCOPE_LIST, unknownGrants } from '../auth/access'
import { ConfigError } from '../config'
import { parseDuration } from '../config-values'
import { parseRowId } from '../db/row-id'
import {
  configFlags,
  databaseFlags,
  type FlagSpec,
  type Flags,
  JSON_FLAG,
  parseFlags,
  renderFlags,
} from './args'
import { printColumns } from './format'
import { commandSource, openCommandData } from './open-data'

const NAME_FLAG: FlagSpec = {
  flag: 'name',
  env: [],
  defaultText: '(required)',
  help: 'a name to tell the key apart',
}
const SCOPE_FLAG: FlagSpec = {
  flag: 'scope',
  env: [],
  defaultText: '* (every scope)',
  help: `a scope the key holds, repeatable: ${SCOPE_LIST}`,
  multiple: true,
}
const EXPIRES_FLAG: FlagSpec = {
  flag: 'expires',
  env: [],
  defaultText: 'never',
  help: 'when the key stops working: a duration from now (90d, 12h, 30m) or an ISO 8601 time',
  valueName: 'WHEN',
}

export const KEYS_HELP =
  () => `Usage: roster keys create --name NAME [--scope SCOPE]... [--expires WHEN]
       roster keys list [--json]
       roster keys revoke ID

Manages API keys directly in the database (the server may be running).
create prints the new key alone on stdout (so KEY=$(roster keys create --name ci) works) and
its id on stderr; the key is not shown again. Without --scope the key holds every scope (*).
revoke refuses the key, and every key made from it, from the next request on.

${renderFlags([NAME_FLAG, SCOPE_FLAG, EXPIRES_FLAG, JSON_FLAG, ...databaseFlags()])}`

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
  const specs = [...databaseFlags(), NAME_FLAG, SCOPE_FLAG, EXPIRES_FLAG, JSON_FLAG]
  const { flags, positionals } = parseFlags('keys', rest, specs, action === 'revoke' ? 1 : 0)
  if (flags.help) {
    console.log(KEYS_HELP())
    return 0
  }
  const { name, json, expires, ...serverFlags } = configFlags(flags)
  const scopes = grantsFlag(flags.scope)
  const expiresAt = typeof expires === 'string' ? expiryFlag(expires, new Date()) : null
  const deps = await openCommandData(serverFlags, env)
  try {
    switch (action) {
      case 'create': {
        if (typeof name !== 'string' || name.trim() === '')
          throw new ConfigError('keys create needs --name')
        const key = await deps.apiKeys.create(
          { name: name.trim(), scopes, expiresAt },
          commandSource(),
        )
        const expiry = key.expires_at === null ? '' : `, expires ${key.expires_at}`
        console.error(
          `created API key ${key.id} (${key.prefix}…) named ${JSON.stringify(key.name)}, scopes ${key.scopes.join(' ')}${expiry}`,
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
        if (!(await deps.apiKeys.revoke(id, commandSource()))) {
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

/** --scope, repeatable; none given: every scope, as keys had before scopes. */
function grantsFlag(value: Flags[string]): readonly Grant[] {
  if (value === undefined) return ALL_SCOPES
  const words = (Array.isArray(value) ? value : [String(value)]).flatMap((text) =>
    text.split(/[\s,]+/).filter((word) => word !== ''),
  )
  const unknown = unknownGrants(words)
  if (unknown.length > 0 || words.length === 0) {
    throw new ConfigError(
      `invalid value for --scope: ${JSON.stringify(unknown[0] ?? '')} (expected ${SCOPE_LIST})`,
    )
  }
  return words as Grant[]
}

/** --expires: a duration from now or an ISO 8601 time, which must lie ahead. */
function expiryFlag(text: string, now: Date): string {
  const at = /^[0-9]+ ?[mhd]$/i.test(text.trim())
    ? new Date(now.getTime() + parseDuration(text, '--expires'))
    : new Date(Date.parse(text))
  if (Number.isNaN(at.getTime()) || at.getTime() <= now.getTime()) {
    throw new ConfigError(
      `invalid value for --expires: ${JSON.stringify(text)} (expected a duration such as 90d, or an ISO 8601 time in the future)`,
    )
  }
  return at.toISOString()
}

function printTable(
  rows: {
    id: number
    name: string
    prefix: string
    created_at: string
    last_used_at: string | null
    scopes: readonly Grant[]
    expires_at: string | null
  }[],
) {
  const table = [['ID', 'NAME', 'PREFIX', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED']].concat(
    rows.map((row) => [
      String(row.id),
      row.name,
      `${row.prefix}…`,
      row.scopes.join(' '),
      row.created_at,
      row.expires_at ?? 'never',
      row.last_used_at ?? 'never',
    ]),
  )
  printColumns(table)
}
