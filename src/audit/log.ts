import {
  type ActorType,
  type AuditEvent,
  type AuditRow,
  type AuditSource,
  eventOfRow,
  type NewAuditEvent,
  type NewAuditRow,
  rowOfEvent,
} from './events'

/** An event's write as a database does it, alone or inside a unit of work. */
export interface AuditWriteRows {
  insert(row: NewAuditRow): Promise<void>
}

/** Appends events; inside a unit of work, they commit with the change they describe. */
export interface AuditWrites {
  record(source: AuditSource, event: NewAuditEvent): Promise<void>
}

/** What GET /audit and `roster audit` filter on; every field given must match. */
export interface AuditFilter {
  actorType?: ActorType
  actorId?: string
  targetType?: string
  targetId?: string
  /** An exact action (`user.created`), or every action of a kind (`user.*`). */
  action?: string
  /** At or after this instant (ISO 8601, as stored). */
  since?: string
  /** Before this instant. */
  until?: string
}

/** A page newest first: `limit` events older than the event `before` (its seq), if given. */
export interface AuditPageRequest {
  limit: number
  before: number | null
}

/**
 * A place in the live feed: opaque text that sorts as the feed does (a later place compares
 * greater, as strings). Every instance hands out and reads the same places.
 */
export type FeedPosition = string

export interface FeedRow {
  row: AuditRow
  position: FeedPosition
}

/** What a database keeps of the audit log: row operations only. */
export interface AuditRows extends AuditWriteRows {
  /** Up to `limit` + 1 rows matching the filter, newest first, older than `before`. */
  page(filter: AuditFilter, request: AuditPageRequest): Promise<AuditRow[]>
  get(seq: number): Promise<AuditRow | null>
  /** Deletes up to `limit` of the oldest events before `cutoff`; how many went. */
  purgeBefore(cutoff: string, limit: number): Promise<number>
  /**
   * Up to `limit` events after `position` (from the start when null) in feed order, each with
   * its position. Only events whose place is final: no event can later appear before one
   * returned (PostgreSQL holds back events of transactions younger than one still running).
   */
  after(position: FeedPosition | null, limit: number): Promise<FeedRow[]>
  /** The position after every event whose place is final now: a new subscriber starts here. */
  head(): Promise<FeedPosition>
  /** Whether `text` is a position this database hands out (a Last-Event-ID is client input). */
  isPosition(text: string): boolean
  /**
   * Calls `listener` when events may have been committed, by this instance or (on a shared
   * database) another; returns a function that stops it. A wake-up may be spurious or, rarely,
   * lost: the feed reads the table, and reads it again on a timer.
   */
  watch(listener: () => void): Promise<() => void>
}

/** The audit log as routes, the CLI and the feed read it. */
export interface AuditLog extends AuditWrites {
  /** A page newest first, and the seq to pass as `before` for the next (null on the last). */
  page(
    filter: AuditFilter,
    request: AuditPageRequest,
  ): Promise<{ data: AuditEvent[]; next: number | null }>
  get(seq: number): Promise<AuditEvent | null>
  purgeBefore(cutoff: string, limit: number): Promise<number>
  readonly feed: AuditFeed
}

/** An event in the feed, with its place. */
export interface FeedEntry {
  event: AuditEvent
  position: FeedPosition
}

/** The live feed's reads (see AuditRows: `after`, `head`, `isPosition`, `watch`). */
export interface AuditFeed extends Pick<AuditRows, 'head' | 'isPosition' | 'watch'> {
  after(position: FeedPosition | null, limit: number): Promise<FeedEntry[]>
}

/** The log's one rule for writes: when an event happened is the log's clock, not the caller's. */
export function auditWrites(rows: AuditWriteRows, now: () => Date): AuditWrites {
  return {
    record: (source, event) => rows.insert(rowOfEvent(source, event, now().toISOString())),
  }
}

export function createAuditLog(rows: AuditRows, now: () => Date): AuditLog {
  return {
    ...auditWrites(rows, now),
    async page(filter, request) {
      const found = await rows.page(filter, request)
      const more = found.length > request.limit
      const data = (more ? found.slice(0, request.limit) : found).map(eventOfRow)
      return { data, next: more ? (found[request.limit - 1]?.seq ?? null) : null }
    },
    get: async (seq) => {
      const row = await rows.get(seq)
      return row === null ? null : eventOfRow(row)
    },
    purgeBefore: (cutoff, limit) => rows.purgeBefore(cutoff, limit),
    feed: {
      async after(position, limit) {
        const found = await rows.after(position, limit)
        return found.map((entry) => ({ event: eventOfRow(entry.row), position: entry.position }))
      },
      head: () => rows.head(),
      isPosition: (text) => rows.isPosition(text),
      watch: (listener) => rows.watch(listener),
    },
  }
}

/** Whether an event passes a filter (the feed's and `roster audit --follow`'s, in memory). */
export function eventMatches(event: AuditEvent, filter: AuditFilter): boolean {
  return (
    (filter.actorType === undefined || event.actor.type === filter.actorType) &&
    (filter.actorId === undefined || event.actor.id === filter.actorId) &&
    (filter.targetType === undefined || event.target.type === filter.targetType) &&
    (filter.targetId === undefined || event.target.id === filter.targetId) &&
    (filter.action === undefined || actionMatches(event.action, filter.action)) &&
    (filter.since === undefined || event.at >= filter.since) &&
    (filter.until === undefined || event.at < filter.until)
  )
}

/** Whether an event's action matches a filter's: exactly, or by kind (`user.*`). */
export function actionMatches(action: string, pattern: string): boolean {
  return pattern.endsWith('.*') ? action.startsWith(pattern.slice(0, -1)) : action === pattern
}
