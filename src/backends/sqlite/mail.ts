import { bothWays, directionOf, type ListRequest } from '../../db/page'
import {
  type MailCounter,
  type MailOutbox,
  type MailRequest,
  type MailStatus,
  type MailView,
  type MailWrites,
  type NewMail,
  type OutgoingRow,
  outgoingOfRow,
  type RequestedRow,
  requestedOfRow,
} from '../../mail/outbox'
import { emailKey } from '../../users/records'
import type { Store } from './connection'
import { settle } from './settle'

/** The SQLite outbox, and its write as a unit of work sees it. */
export interface SqliteMailOutbox extends MailOutbox {
  readonly inUnit: MailWrites
}

const VIEW = `id, flow, to_address AS "to", subject, status, attempts, last_error, created_at,
  sent_at, text_body AS text`

/**
 * The outbox in SQLite: one worker per file, so a claim is a read of committed rows (no lease);
 * the outcomes go through the group commit.
 */
export function createSqliteMailOutbox(store: Store, now: () => Date): SqliteMailOutbox {
  const writer = store.db.$client
  const { reader, writes } = store
  const insert = writer.query<
    Record<string, never>,
    [string, string, string, string, string | null, string, string, string, string, number]
  >(
    `INSERT INTO mail_outbox (message_id, flow, to_address, to_key, client_ip, subject, text_body,
       html_body, status, created_at, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
  )
  const insertRequest = writer.query<
    Record<string, never>,
    [string, string, string, string, string | null, string, string, number]
  >(
    `INSERT INTO mail_outbox (message_id, flow, to_address, to_key, client_ip, link_base, subject,
       status, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, '', 'requested', ?, ?)`,
  )
  const fulfil = writer.query<Record<string, never>, [string, string, string, string, number]>(
    `UPDATE mail_outbox SET status = 'pending', to_address = ?, subject = ?, text_body = ?,
       html_body = ? WHERE id = ? AND status = 'requested'`,
  )
  const suppress = writer.query<Record<string, never>, [string, number]>(
    `UPDATE mail_outbox SET status = 'suppressed', last_error = ?, next_attempt_at = NULL
     WHERE id = ? AND status = 'requested'`,
  )
  const requested = reader.query<RequestedRow, [number, number]>(
    `SELECT id, flow, to_address, client_ip, link_base, message_id FROM mail_outbox
     WHERE next_attempt_at <= ? AND status = 'requested' ORDER BY next_attempt_at, id LIMIT ?`,
  )
  const earliestRequested = reader.query<{ at: number | null }, []>(
    "SELECT min(next_attempt_at) AS at FROM mail_outbox WHERE status = 'requested'",
  )
  const countTo = writer.query<{ count: number; oldest: string | null }, [string, string]>(
    `SELECT count(*) AS count, min(created_at) AS oldest FROM mail_outbox
     WHERE to_key = ? AND created_at >= ?`,
  )
  const countFrom = writer.query<{ count: number; oldest: string | null }, [string, string]>(
    `SELECT count(*) AS count, min(created_at) AS oldest FROM mail_outbox
     WHERE client_ip = ? AND created_at >= ?`,
  )
  const due = reader.query<OutgoingRow, [number, number]>(
    `SELECT id, message_id, to_address, subject, text_body, html_body, attempts FROM mail_outbox
     WHERE next_attempt_at <= ? AND status = 'pending' ORDER BY next_attempt_at, id LIMIT ?`,
  )
  const earliest = reader.query<{ at: number | null }, []>(
    'SELECT min(next_attempt_at) AS at FROM mail_outbox',
  )
  const sent = writer.query(
    `UPDATE mail_outbox SET status = 'sent', attempts = attempts + 1, last_error = NULL,
       sent_at = ?, next_attempt_at = NULL, text_body = NULL, html_body = NULL WHERE id = ?`,
  )
  const failed = writer.query(
    `UPDATE mail_outbox SET status = CASE WHEN ?1 IS NULL THEN 'failed' ELSE 'pending' END,
       attempts = attempts + 1, last_error = ?2, next_attempt_at = ?1
     WHERE id = ?3 AND status = 'pending'`,
  )
  const statusOf = writer.query<{ status: MailStatus }, [number]>(
    'SELECT status FROM mail_outbox WHERE id = ?',
  )
  const resend = writer.query<MailView, [number, number]>(
    `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = ? WHERE id = ?
     RETURNING ${VIEW}`,
  )
  const byId = reader.query<MailView, [number]>(`SELECT ${VIEW} FROM mail_outbox WHERE id = ?`)
  const page = bothWays((direction) =>
    reader.query<MailView, [number, number]>(
      `SELECT ${VIEW} FROM mail_outbox ORDER BY id ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM mail_outbox')
  const pageWithStatus = bothWays((direction) =>
    reader.query<MailView, [MailStatus, number, number]>(
      `SELECT ${VIEW} FROM mail_outbox WHERE status = ? ORDER BY id ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const totalWithStatus = reader.query<{ n: number }, [MailStatus]>(
    'SELECT count(*) AS n FROM mail_outbox WHERE status = ?',
  )
  const readPage = store.snapshot((request: ListRequest, status: MailStatus | undefined) => {
    const direction = directionOf(request, 'newest')
    return status === undefined
      ? { data: page[direction].all(request.limit, request.offset), total: total.get()?.n ?? 0 }
      : {
          data: pageWithStatus[direction].all(status, request.limit, request.offset),
          total: totalWithStatus.get(status)?.n ?? 0,
        }
  })
  const enqueue = (mail: NewMail) => {
    const at = now()
    insert.run(
      mail.messageId,
      mail.flow,
      mail.to,
      emailKey(mail.to),
      mail.clientIp,
      mail.subject,
      mail.text,
      mail.html,
      at.toISOString(),
      at.getTime(),
    )
  }

  const request = (mail: MailRequest) => {
    const at = now()
    insertRequest.run(
      mail.messageId,
      mail.flow,
      mail.to,
      emailKey(mail.to),
      mail.clientIp,
      mail.linkBase,
      at.toISOString(),
      at.getTime(),
    )
  }
  const countSince = (counter: MailCounter, since: string) =>
    ('toKey' in counter
      ? countTo.get(counter.toKey, since)
      : countFrom.get(counter.clientIp, since)) ?? { count: 0, oldest: null }
  return {
    inUnit: {
      enqueue: (mail) => settle(() => enqueue(mail)),
      request: (mail) => settle(() => request(mail)),
      fulfil: (id, to, content) =>
        settle(() => {
          fulfil.run(to, content.subject, content.text, content.html, id)
        }),
      suppress: (id, reason) =>
        settle(() => {
          suppress.run(reason, id)
        }),
      countSince: (counter, since) => settle(() => countSince(counter, since)),
    },
    claimRequested: (limit) =>
      settle(() => requested.all(now().getTime(), limit).map(requestedOfRow)),
    claimDue: (limit) => settle(() => due.all(now().getTime(), limit).map(outgoingOfRow)),
    markSent: (id) =>
      writes.run(() => {
        sent.run(now().toISOString(), id)
      }),
    markFailed: (id, error, retryAt) =>
      writes.run(() => {
        failed.run(retryAt, error.slice(0, 1000), id)
      }),
    earliestDue: (sending) =>
      settle(() => (sending ? earliest : earliestRequested).get()?.at ?? null),
    resend: (id) =>
      writes.run(() => {
        const found = statusOf.get(id)
        if (found === null) return 'missing' as const
        if (found.status !== 'failed') return 'not-failed' as const
        return resend.get(now().getTime(), id) as MailView
      }),
    get: (id) => settle(() => byId.get(id)),
    list: (request, status) => settle(() => readPage(request, status)),
  }
}
