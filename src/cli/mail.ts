import { ConfigError } from '../config'
import { MAIL_STATUSES, type MailStatus, type MailView } from '../mail/outbox'
import {
  configFlags,
  databaseFlags,
  type FlagSpec,
  JSON_FLAG,
  parseFlags,
  renderFlags,
} from './args'
import { printColumns } from './format'
import { openCommandData } from './open-data'

const STATUS_FLAG: FlagSpec = {
  flag: 'status',
  env: [],
  defaultText: '(every status)',
  help: `only messages in this state: ${MAIL_STATUSES.join(', ')}`,
}
const LIMIT_FLAG: FlagSpec = {
  flag: 'limit',
  env: [],
  defaultText: '50',
  help: 'how many of the newest messages to show',
}
const JSON_TEXT_FLAG: FlagSpec = { ...JSON_FLAG, help: 'print JSON, text bodies included' }

export const MAIL_HELP = () => `Usage: roster mail list [--status STATUS] [--limit N] [--json]

Shows the mail outbox, newest first, straight from the database (the server may be running).
Without --smtp-url roster sends nothing: every message waits here, and LINK is the link it
carries, for a developer to open (a link works once). Sent messages keep no body.

${renderFlags([STATUS_FLAG, LIMIT_FLAG, JSON_TEXT_FLAG, ...databaseFlags()])}`

/** `roster mail list`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [action, ...rest] = args
  if (action === undefined || action === '--help' || action === '-h') {
    console.log(MAIL_HELP())
    return action === undefined ? 2 : 0
  }
  if (action !== 'list') {
    throw new ConfigError(`unknown mail command ${JSON.stringify(action)} (see roster mail --help)`)
  }
  const specs = [...databaseFlags(), STATUS_FLAG, LIMIT_FLAG, JSON_TEXT_FLAG]
  const { flags } = parseFlags('mail', rest, specs)
  if (flags.help) {
    console.log(MAIL_HELP())
    return 0
  }
  const { status, limit, json, ...serverFlags } = configFlags(flags)
  const wanted = statusFlag(status)
  const count = limitFlag(limit)
  const deps = await openCommandData(serverFlags, env)
  try {
    const { data } = await deps.mail.outbox.list({ limit: count, offset: 0 }, wanted)
    if (json === true) console.log(JSON.stringify(data, null, 2))
    else printColumns([HEADER, ...data.map(columnsOf)])
    return 0
  } finally {
    await deps.close()
  }
}

const HEADER = ['ID', 'FLOW', 'TO', 'STATUS', 'ATTEMPTS', 'CREATED', 'LINK OR LAST ERROR']

function columnsOf(mail: MailView): string[] {
  const link = /https?:\/\/\S+/.exec(mail.text ?? '')?.[0]
  return [
    String(mail.id),
    mail.flow,
    mail.to,
    mail.status,
    String(mail.attempts),
    mail.created_at,
    mail.status === 'pending' && link !== undefined ? link : (mail.last_error ?? ''),
  ]
}

function statusFlag(value: unknown): MailStatus | undefined {
  if (value === undefined) return undefined
  if ((MAIL_STATUSES as readonly unknown[]).includes(value)) return value as MailStatus
  throw new ConfigError(
    `invalid value for --status: ${JSON.stringify(value)} (expected ${MAIL_STATUSES.join(', ')})`,
  )
}

function limitFlag(value: unknown): number {
  if (value === undefined) return 50
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    throw new ConfigError(
      `invalid value for --limit: ${JSON.stringify(value)} (expected 1 to 10000)`,
    )
  }
  return n
}
