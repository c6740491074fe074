import type { Database, SQLQueryBindings, Statement } from 'bun:sqlite'
import type { AuditRow, NewAuditRow } from '../../audit/events'
import type {
  AuditFilter,
  AuditPageRequest,
  AuditRows,
  AuditWriteRows,
  FeedRow,
} from '../../audit/log'
import type { Store } from './connection'
import { settle } from './settle'
import type { CommitBuffer } from './write-queue'

const COLUMNS =
  'seq, at, actor_type, actor_id, action, target_type, target_id, request_id, ip, changes'

/** A feed position here: the seq, zero-padded so that positions sort as text. */
const POSITION = /^[0-9]{16}$/
const positionOf = (seq: number) => String(seq).padStart(16, '0')

/** The SQLite audit log, its write as a unit of work sees it, and the commit hook that wakes the feed. */
export interface SqliteAuditRows extends AuditRows {
  readonly inUnit: AuditWriteRows
  /** Called after every commit: wakes the feed's watchers when an event was among the writes. */
  committed(): void
}

/**
 * The audit log in SQLite. One writer commits in seq order, so seq is the feed's order and an
 * event's place is final as soon as a reader sees it.
 */
export function createSqliteAuditRows(store: Store): SqliteAuditRows {
  const { reader, writes } = store
  const sqlite = store.db.$client
  const pending = auditBuffer(sqlite)
  writes.addBuffer(pending)
  const bySeq = reader.query<AuditRow, [number]>(
    `SELECT ${COLUMNS} FROM audit_events WHERE seq = ?`,
  )
  const afterSeq = reader.query<AuditRow, [number, number]>(
    `SELECT ${COLUMNS} FROM audit_events WHERE seq > ? ORDER BY seq LIMIT ?`,
  )
  const last = reader.query<{ seq: number | null }, []>('SELECT max(seq) AS seq FROM audit_events')
  const first = reader.query<{ seq: number | null }, []>('SELECT min(seq) AS seq FROM audit_events')
  // Never the newest event: seq is the rowid, which SQLite would hand out again after it.
  const purge = sqlite.query(
    `DELETE FROM audit_events WHERE seq IN (
       SELECT seq FROM audit_events
       WHERE at < ?1 AND seq < (SELECT max(seq) FROM audit_events)
       ORDER BY seq LIMIT ?2)`,
  )
  const watchers = new Set<() => void>()
  let unannounced = false
  // Inserted with the rest of the batch at its commit (write-queue.ts's CommitBuffer).
  const write = (row: NewAuditRow) => {
    pending.push(row)
    unannounced = true
  }

  /** Newest first over the whole log (bun:sqlite caches a statement per distinct text). */
  const scanPage = (filter: AuditFilter, request: AuditPageRequest): AuditRow[] => {
    const { where, values } = whereOf(filter, request.before)
    return reader
      .query<AuditRow, SQLQueryBindings[]>(
        `SELECT ${COLUMNS} FROM audit_events ${where} ORDER BY seq DESC LIMIT ?`,
      )
      .all(...values, request.limit + 1)
  }

  /**
   * A target's events, newest first: the index leads with the seq's block (schema.ts), so each
   * block is one index seek, from the newest block back until the page is full. A target of a
   * million-event log with few events costs about 4,000 seeks (a few milliseconds).
   */
  const targetPage = (filter: AuditFilter, request: AuditPageRequest): AuditRow[] => {
    const { where, values } = whereOf(filter, request.before)
    const inBlock = reader.query<AuditRow, SQLQueryBindings[]>(
      `SELECT ${COLUMNS} FROM audit_events ${where} AND (seq >> ${BLOCK_BITS}) = ?
       ORDER BY seq DESC LIMIT ?`,
    )
    const newest = request.before === null ? (last.get()?.seq ?? 0) : request.before - 1
    const oldest = first.get()?.seq ?? 0
    const found: AuditRow[] = []
    for (let block = newest >> BLOCK_BITS; block >= oldest >> BLOCK_BITS; block -= 1) {
      found.push(...inBlock.all(...values, block, request.limit + 1 - found.length))
      if (found.length > request.limit) break
    }
    return found
  }

  return {
    inUnit: { insert: (row) => settle(() => write(row)) },
    committed() {
      if (!unannounced) return
      unannounced = false
      for (const watcher of watchers) watcher()
    },
    insert: (row) => writes.run(() => write(row)),
    page: (filter, request) =>
      settle(() =>
        filter.targetType !== undefined && filter.targetId !== undefined
          ? targetPage(filter, request)
          : scanPage(filter, request),
      ),
    get: (seq) => settle(() => bySeq.get(seq)),
    purgeBefore: (cutoff, limit) => writes.run(() => purge.run(cutoff, limit).changes),
    after: (position, limit) =>
      settle(() =>
        afterSeq
          .all(position === null ? 0 : Number(position), limit)
          .map((row): FeedRow => ({ row, position: positionOf(row.seq) })),
      ),
    head: () => settle(() => positionOf(last.get()?.seq ?? 0)),
    isPosition: (text) => POSITION.test(text),
    watch(listener) {
      watchers.add(listener)
      return Promise.resolve(() => {
        watchers.delete(listener)
      })
    },
  }
}

/** Rows per INSERT at commit: one prepared statement per row count up to this. */
const ROWS_PER_INSERT = 32

/**
 * The events of a group commit, inserted just before its COMMIT: in commit order (one writer),
 * 32 rows to a statement. A write rolled back takes its events out (WriteQueue cuts the buffer
 * back to where its savepoint found it).
 */
function auditBuffer(sqlite: Database): CommitBuffer & { push(row: NewAuditRow): void } {
  let rows: NewAuditRow[] = []
  const statements = new Map<number, Statement>()
  const insertOf = (count: number): Statement => {
    let statement = statements.get(count)
    if (statement === undefined) {
      statement = sqlite.prepare(
        `INSERT INTO audit_events (at, actor_type, actor_id, action, target_type, target_id,
           request_id, ip, changes) VALUES ${Array(count).fill('(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      )
      statements.set(count, statement)
    }
    return statement
  }
  return {
    get size() {
      return rows.length
    },
    push: (row) => {
      rows.push(row)
    },
    truncate: (size) => {
      rows.length = Math.min(rows.length, size)
    },
    flush() {
      const waiting = rows
      rows = []
      for (let start = 0; start < waiting.length; start += ROWS_PER_INSERT) {
        const chunk = waiting.slice(start, start + ROWS_PER_INSERT)
        const values: SQLQueryBindings[] = []
        for (const row of chunk) {
          values.push(
            row.at,
            row.actor_type,
            row.actor_id,
            row.action,
            row.target_type,
            row.target_id,
            row.request_id,
            row.ip,
            row.changes,
          )
        }
        insertOf(chunk.length).run(...values)
      }
    },
  }
}

/** The target index's blocks are 2^8 = 256 events (schema.ts's `seq >> 8`). */
const BLOCK_BITS = 8

/** The WHERE clause of a filtered page (bun:sqlite caches a statement per distinct text). */
function whereOf(
  filter: AuditFilter,
  before: number | null,
): { where: string; values: SQLQueryBindings[] } {
  const conditions: string[] = []
  const values: SQLQueryBindings[] = []
  const add = (condition: string, value: SQLQueryBindings) => {
    conditions.push(condition)
    values.push(value)
  }
  if (before !== null) add('seq < ?', before)
  if (filter.actorType !== undefined) add('actor_type = ?', filter.actorType)
  if (filter.actorId !== undefined) add('actor_id = ?', filter.actorId)
  if (filter.targetType !== undefined) add('target_type = ?', filter.targetType)
  if (filter.targetId !== undefined) add('target_id = ?', filter.targetId)
  const action = filter.action
  if (action?.endsWith('.*')) {
    // A kind's prefix, compared as text: LIKE would treat `_` in it as a wildcard.
    conditions.push('substr(action, 1, ?) = ?')
    values.push(action.length - 1, action.slice(0, -1))
  } else if (action !== undefined) add('action = ?', action)
  if (filter.since !== undefined) add('at >= ?', filter.since)
  if (filter.until !== undefined) add('at < ?', filter.until)
  return { where: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, values }
}
