import type { SQL } from 'bun'
import type { AuditRow, NewAuditRow } from '../../audit/events'
import type { AuditFilter, AuditRows, AuditWriteRows, FeedRow } from '../../audit/log'

const COLUMNS =
  'seq::float8 AS seq, at, actor_type, actor_id, action, target_type, target_id, request_id, ip, changes'

/** The channel every instance listens on; an event's transaction notifies it on commit. */
const CHANNEL = 'roster_audit'

/**
 * A feed position here: the writing transaction's xid and the event's seq, each zero-padded,
 * so that positions sort as text in the feed's order.
 */
const POSITION = /^([0-9]{20})\.([0-9]{19})$/
const positionOf = (xid: string, seq: number) =>
  `${xid.padStart(20, '0')}.${String(seq).padStart(19, '0')}`

/** The PostgreSQL audit log, and its write inside a unit's transaction. */
export interface PgAuditRows extends AuditRows {
  inUnit(tx: SQL): AuditWriteRows
}

/**
 * The audit log in PostgreSQL, shared by every instance. Several transactions write at once and
 * a seq is taken before its commit, so seq order is not commit order: a reader that followed
 * seq could pass an event that commits later with a smaller one. The feed follows (xid, seq)
 * instead and shows an event only once every transaction older than the horizon of a fresh
 * snapshot (pg_snapshot_xmin) has ended: from then on no event can appear before it. A
 * transaction left open holds the feed back until it ends; nothing is lost meanwhile.
 */
export function createPgAuditRows(pool: SQL): PgAuditRows {
  // One statement: the event and the wake-up, which PostgreSQL sends at commit (never on a
  // rollback) and sends once however many events the transaction wrote.
  const insertOn = async (q: SQL, row: NewAuditRow) => {
    await q`
      WITH event AS (
        INSERT INTO audit_events (at, actor_type, actor_id, action, target_type, target_id,
          request_id, ip, changes)
        VALUES (${row.at}, ${row.actor_type}, ${row.actor_id}, ${row.action}, ${row.target_type},
          ${row.target_id}, ${row.request_id}, ${row.ip}, ${row.changes})
        RETURNING 1)
      SELECT pg_notify(${CHANNEL}, '') FROM event`
  }

  return {
    inUnit: (tx) => ({ insert: (row) => insertOn(tx, row) }),
    insert: (row) => insertOn(pool, row),
    async page(filter, request) {
      const { where, values } = whereOf(filter, request.before)
      return pool.unsafe<AuditRow[]>(
        `SELECT ${COLUMNS} FROM audit_events ${where} ORDER BY audit_events.seq DESC LIMIT $${values.length + 1}`,
        [...values, request.limit + 1],
      )
    },
    async get(seq) {
      const [row] = await pool.unsafe<AuditRow[]>(
        `SELECT ${COLUMNS} FROM audit_events WHERE seq = $1::int8`,
        [seq],
      )
      return row ?? null
    },
    async purgeBefore(cutoff, limit) {
      const result = await pool`
        DELETE FROM audit_events WHERE seq IN (
          SELECT seq FROM audit_events
          WHERE at < ${cutoff} AND seq < (SELECT max(seq) FROM audit_events)
          ORDER BY seq LIMIT ${limit})`
      return result.count
    },
    async after(position, limit) {
      const [xid, seq] = position === null ? ['0', 0] : splitPosition(position)
      // Ordered by the table's xid8 and bigint: an output column named `xid` (the text) would
      // be what ORDER BY xid sorts by, and '1000' sorts before '999'.
      const rows = await pool.unsafe<(AuditRow & { xid_text: string })[]>(
        `SELECT ${COLUMNS}, xid::text AS xid_text FROM audit_events
         WHERE (xid, seq) > ($1::xid8, $2::int8) AND xid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY audit_events.xid, audit_events.seq LIMIT $3`,
        [xid, seq, limit],
      )
      return rows.map(
        ({ xid_text, ...row }): FeedRow => ({
          row,
          position: positionOf(xid_text, row.seq),
        }),
      )
    },
    async head() {
      const [row] = await pool<{ horizon: string }[]>`
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`
      return positionOf(row?.horizon ?? '0', 0)
    },
    isPosition: (text) => POSITION.test(text),
    async watch(listener) {
      const subscription = await pool.listen(CHANNEL, () => listener())
      return () => {
        subscription.unlisten().catch(() => {})
      }
    },
  }
}

function splitPosition(position: string): [string, number] {
  const match = POSITION.exec(position)
  if (match === null) return ['0', 0]
  return [String(BigInt(match[1] as string)), Number(match[2])]
}

/** The WHERE clause of a filtered page, with its values as $1, $2, … */
function whereOf(
  filter: AuditFilter,
  before: number | null,
): { where: string; values: (string | number)[] } {
  const conditions: string[] = []
  const values: (string | number)[] = []
  const add = (condition: (n: string) => string, value: string | number) => {
    values.push(value)
    conditions.push(condition(`$${values.length}`))
  }
  if (before !== null) add((n) => `seq < ${n}::int8`, before)
  if (filter.actorType !== undefined) add((n) => `actor_type = ${n}`, filter.actorType)
  if (filter.actorId !== undefined) add((n) => `actor_id = ${n}`, filter.actorId)
  if (filter.targetType !== undefined) add((n) => `target_type = ${n}`, filter.targetType)
  if (filter.targetId !== undefined) add((n) => `target_id = ${n}`, filter.targetId)
  const action = filter.action
  if (action?.endsWith('.*')) add((n) => `starts_with(action, ${n})`, action.slice(0, -1))
  else if (action !== undefined) add((n) => `action = ${n}`, action)
  if (filter.since !== undefined) add((n) => `at >= ${n}`, filter.since)
  if (filter.until !== undefined) add((n) => `at < ${n}`, filter.until)
  return { where: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, values }
}
