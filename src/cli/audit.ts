import { ACTOR_TYPES, type ActorType, type AuditEvent, parseInstant } from '../audit/events'
import { type AuditFilter, eventMatches } from '../audit/log'
import { ConfigError } from '../config'
import type { Deps } from '../deps'
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
import { openCommandData } from './open-data'

const text = (flag: string, help: string, valueName?: string): FlagSpec => ({
  flag,
  env: [],
  defaultText: '(any)',
  help,
  ...(valueName === undefined ? {} : { valueName }),
})

const FILTER_FLAGS: FlagSpec[] = [
  text('action', 'an action (user.updated), or every action of a kind (user.*)'),
  text('actor-type', `who acted: ${ACTOR_TYPES.join(', ')}`),
  text('actor-id', 'the acting user or key id'),
  text('target-type', 'what was acted on: user, group, api_key, upload, session, login, …'),
  text('target-id', 'its id (--target-type user --target-id 5: who changed user 5?)'),
  text('since', 'at or after this instant (ISO 8601, such as 2026-11-25T10:00:00Z)', 'TIME'),
  text('until', 'before this instant (ISO 8601)', 'TIME'),
]
const LIMIT_FLAG: FlagSpec = {
  flag: 'limit',
  env: [],
  defaultText: '50',
  help: 'how many of the newest events to show (1 to 10000)',
}
const FOLLOW_FLAG: FlagSpec = {
  flag: 'follow',
  env: [],
  defaultText: 'false',
  help: 'after the newest events, keep printing matching events as they happen (Ctrl-C stops)',
  boolean: true,
}
const FLAGS = [...FILTER_FLAGS, LIMIT_FLAG, FOLLOW_FLAG, JSON_FLAG, ...databaseFlags()]

export const AUDIT_HELP = () => `Usage: roster audit [filters] [--limit N] [--follow] [--json]

Shows the newest events of the audit log (the oldest of them first, as tail does), straight
from the database (the server may be running): who changed what and when, every sign-in,
failed sign-in and lockout. With --follow, then prints each new matching event as it is
committed, until stopped. --json prints one event per line, as GET /audit answers them.

${renderFlags(FLAGS)}`

/** How often --follow looks for new events (the server runs in another process). */
const FOLLOW_POLL_MS = 1000

/** `roster audit`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('audit', args, FLAGS)
  if (flags.help) {
    console.log(AUDIT_HELP())
    return 0
  }
  const filter = filterOf(flags)
  const limit = limitOf(flags.limit)
  const { json, follow, ...rest } = configFlags(flags)
  const serverFlags = Object.fromEntries(
    Object.entries(rest).filter(([flag]) => databaseFlags().some((spec) => spec.flag === flag)),
  )
  const deps = await openCommandData(serverFlags, env)
  try {
    const print = json === true ? printJson : printTable
    // Where --follow starts: taken before the page is read, so nothing falls between the two.
    const start = follow === true ? await deps.audit.feed.head() : null
    const { data } = await deps.audit.page(filter, { limit, before: null })
    print([...data].reverse())
    if (start !== null) await followFrom(deps, start, filter, print)
    return 0
  } finally {
    await deps.close()
  }
}

/** Prints matching events after `position` as they are committed, until SIGINT or SIGTERM. */
async function followFrom(
  deps: Deps,
  start: string,
  filter: AuditFilter,
  print: (events: AuditEvent[]) => void,
): Promise<void> {
  let position = start
  let stopped = false
  const stop = () => {
    stopped = true
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  const shown = new Set<string>()
  while (!stopped) {
    const rows = await deps.audit.feed.after(position, 500)
    const events = rows.map((entry) => entry.event)
    // The page already showed the newest events; the feed may begin a little before them.
    print(events.filter((event) => eventMatches(event, filter) && !shown.has(event.id)))
    for (const event of events) shown.add(event.id)
    if (shown.size > 10_000) shown.clear()
    position = rows.at(-1)?.position ?? position
    if (rows.length < 500) await Bun.sleep(FOLLOW_POLL_MS)
  }
}

function printJson(events: AuditEvent[]): void {
  for (const event of events) console.log(JSON.stringify(event))
}

function printTable(events: AuditEvent[]): void {
  if (events.length === 0) return
  printColumns([
    ['AT', 'ACTION', 'TARGET', 'ACTOR', 'REQUEST', 'CHANGES'],
    ...events.map((event) => [
      event.at,
      event.action,
      `${event.target.type} ${event.target.id ?? ''}`.trim(),
      `${event.actor.type} ${event.actor.id ?? ''}`.trim(),
      event.request_id ?? '',
      event.changes === null ? '' : JSON.stringify(event.changes),
    ]),
  ])
}

function filterOf(flags: Flags): AuditFilter {
  const value = (name: string) => {
    const given = flags[name]
    return typeof given === 'string' ? given : undefined
  }
  const filter: AuditFilter = {
    action: value('action'),
    actorId: value('actor-id'),
    targetType: value('target-type'),
    targetId: value('target-id'),
  }
  const actorType = value('actor-type')
  if (actorType !== undefined) {
    if (!(ACTOR_TYPES as readonly string[]).includes(actorType)) {
      throw new ConfigError(
        `invalid value for --actor-type: ${JSON.stringify(actorType)} (expected ${ACTOR_TYPES.join(', ')})`,
      )
    }
    filter.actorType = actorType as ActorType
  }
  filter.since = instantFlag('since', value('since'))
  filter.until = instantFlag('until', value('until'))
  return filter
}

function instantFlag(name: string, given: string | undefined): string | undefined {
  if (given === undefined) return undefined
  const at = parseInstant(given)
  if (at === null) {
    throw new ConfigError(
      `invalid value for --${name}: ${JSON.stringify(given)} (expected an ISO 8601 instant, such as 2026-11-25T10:00:00Z)`,
    )
  }
  return at
}

function limitOf(value: unknown): number {
  if (value === undefined) return 50
  const n = Number(value)
  if (typeof value !== 'string' || !/^[0-9]+$/.test(value) || n < 1 || n > 10_000) {
    throw new ConfigError(
      `invalid value for --limit: ${JSON.stringify(value)} (expected 1 to 10000)`,
    )
  }
  return n
}
