import type { SQL } from 'bun'
import { directionOf } from '../../db/page'
import {
  type MailContent,
  type MailCounter,
  type MailOutbox,
  type MailRequest,
  type MailStatus,
  type MailView,
  type MailWrites,
  type NewMail,
  type OutgoingRow,
  outgoingOfRow,
  type RequestedMail,
  type RequestedRow,
  requestedOfRow,
} from '../../mail/outbox'
import { emailKey } from '../../users/records'
import { pageOf, type WithTotal } from './page'

/** The PostgreSQL outbox, and its write inside a unit's transaction. */
export interface PgMailOutbox extends MailOutbox {
  inUnit(tx: SQL): MailWrites
}

const VIEW = `id, flow, to_address AS "to", subject, status, attempts, last_error, created_at,
  sent_at, text_body AS text`

/**
 * The outbox in PostgreSQL, shared by every instance's worker: `claimDue` leases due messages
 * no one holds (`FOR UPDATE SKIP LOCKED`) until the time the worker names; the outcome ends
 * the lease; a message whose instance died mid-send is due again once its lease lapses.
 */
export function createPgMailOutbox(pool: SQL, now: () => Date): PgMailOutbox {
  const enqueue = async (sql: SQL, mail: NewMail) => {
    const at = now()
    await sql`
      INSERT INTO mail_outbox (message_id, flow, to_address, to_key, client_ip, subject,
        text_body, html_body, status, created_at, next_attempt_at)
      VALUES (${mail.messageId}, ${mail.flow}, ${mail.to}, ${emailKey(mail.to)}, ${mail.clientIp},
        ${mail.subject}, ${mail.text}, ${mail.html}, 'pending', ${at.toISOString()}, ${at.getTime()})`
  }
  const request = async (sql: SQL, mail: MailRequest) => {
    const at = now()
    await sql`
      INSERT INTO mail_outbox (message_id, flow, to_address, to_key, client_ip, link_base,
        subject, status, created_at, next_attempt_at)
      VALUES (${mail.messageId}, ${mail.flow}, ${mail.to}, ${emailKey(mail.to)}, ${mail.clientIp},
        ${mail.linkBase}, '', 'requested', ${at.toISOString()}, ${at.getTime()})`
  }
  const fulfil = async (sql: SQL, id: number, to: string, content: MailContent) => {
    await sql`
      UPDATE mail_outbox SET status = 'pending', to_address = ${to}, subject = ${content.subject},
        text_body = ${content.text}, html_body = ${content.html}, lease_until = NULL
      WHERE id = ${id} AND status = 'requested'`
  }
  const suppress = async (sql: SQL, id: number, reason: string) => {
    await sql`
      UPDATE mail_outbox SET status = 'suppressed', last_error = ${reason},
        next_attempt_at = NULL, lease_until = NULL
      WHERE id = ${id} AND status = 'requested'`
  }
  /** Leases up to `limit` due rows of `status` no one holds, earliest first. */
  const claim = async <T extends { id: number }>(
    status: string,
    limit: number,
    leaseUntil: number,
    columns: string,
  ) => {
    const at = now().getTime()
    const rows = await pool.unsafe<(T & { due: number })[]>(
      `UPDATE mail_outbox m SET lease_until = $1
       FROM (
         SELECT id FROM mail_outbox
         WHERE next_attempt_at <= $2 AND status = $3 AND (lease_until IS NULL OR lease_until <= $2)
         ORDER BY next_attempt_at, id LIMIT $4
         FOR UPDATE SKIP LOCKED
       ) due
       WHERE m.id = due.id
       RETURNING ${columns}, m.next_attempt_at::float8 AS due`,
      [leaseUntil, at, status, limit],
    )
    // Earliest due first, as the claim chose them (UPDATE … RETURNING keeps no order).
    return rows.sort((a, b) => a.due - b.due || a.id - b.id)
  }
  const countSince = async (sql: SQL, counter: MailCounter, since: string) => {
    const [row] =
      'toKey' in counter
        ? await sql<{ count: number; oldest: string | null }[]>`
            SELECT count(*)::int AS count, min(created_at) AS oldest FROM mail_outbox
            WHERE to_key = ${counter.toKey} AND created_at >= ${since}`
        : await sql<{ count: number; oldest: string | null }[]>`
            SELECT count(*)::int AS count, min(created_at) AS oldest FROM mail_outbox
            WHERE client_ip = ${counter.clientIp} AND created_at >= ${since}`
    return row ?? { count: 0, oldest: null }
  }
  return {
    inUnit: (tx) => ({
      enqueue: (mail) => enqueue(tx, mail),
      request: (mail) => request(tx, mail),
      fulfil: (id, to, content) => fulfil(tx, id, to, content),
      suppress: (id, reason) => suppress(tx, id, reason),
      countSince: (counter, since) => countSince(tx, counter, since),
    }),

    async claimRequested(limit, leaseUntil): Promise<RequestedMail[]> {
      const rows = await claim<RequestedRow>(
        'requested',
        limit,
        leaseUntil,
        'm.id, m.flow, m.to_address, m.client_ip, m.link_base, m.message_id',
      )
      return rows.map(requestedOfRow)
    },

    async claimDue(limit, leaseUntil) {
      const rows = await claim<OutgoingRow>(
        'pending',
        limit,
        leaseUntil,
        'm.id, m.message_id, m.to_address, m.subject, m.text_body, m.html_body, m.attempts',
      )
      return rows.map(outgoingOfRow)
    },

    async markSent(id) {
      await pool`
        UPDATE mail_outbox SET status = 'sent', attempts = attempts + 1, last_error = NULL,
          sent_at = ${now().toISOString()}, next_attempt_at = NULL, lease_until = NULL,
          text_body = NULL, html_body = NULL
        WHERE id = ${id}`
    },

    async markFailed(id, error, retryAt) {
      await pool`
        UPDATE mail_outbox SET status = ${retryAt === null ? 'failed' : 'pending'},
          attempts = attempts + 1, last_error = ${error.slice(0, 1000)},
          next_attempt_at = ${retryAt}, lease_until = NULL
        WHERE id = ${id} AND status = 'pending'`
    },

    async earliestDue(sending) {
      // A leased message falls due again when its lease lapses (its holder may have died).
      const [row] = await pool<{ at: number | null }[]>`
        SELECT min(greatest(next_attempt_at, coalesce(lease_until, 0)))::float8 AS at
        FROM mail_outbox
        WHERE next_attempt_at IS NOT NULL AND (${sending} OR status = 'requested')`
      return row?.at ?? null
    },

    async resend(id) {
      return await pool.begin(async (tx) => {
        const [found] = await tx<{ status: MailStatus }[]>`
          SELECT status FROM mail_outbox WHERE id = ${id} FOR UPDATE`
        if (found === undefined) return 'missing' as const
        if (found.status !== 'failed') return 'not-failed' as const
        const [updated] = await tx.unsafe<MailView[]>(
          `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = $1
           WHERE id = $2 RETURNING ${VIEW}`,
          [now().getTime(), id],
        )
        return updated as MailView
      })
    },

    async get(id) {
      const [row] = await pool.unsafe<MailView[]>(`SELECT ${VIEW} FROM mail_outbox WHERE id = $1`, [
        id,
      ])
      return row ?? null
    },

    async list(request, status) {
      const filtered = status !== undefined
      const filter = filtered ? [status] : []
      return pageOf(
        await pool.unsafe<WithTotal<MailView>[]>(
          `SELECT ${VIEW}, (count(*) OVER ())::int AS total FROM mail_outbox
           ${filtered ? 'WHERE status = $3' : ''}
           ORDER BY id ${directionOf(request, 'newest')} LIMIT $1 OFFSET $2`,
          [request.limit, request.offset, ...filter],
        ),
        () =>
          pool.unsafe(
            `SELECT count(*)::int AS n FROM mail_outbox ${filtered ? 'WHERE status = $1' : ''}`,
            filter,
          ),
      )
    },
  }
}
