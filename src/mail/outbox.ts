import type { ListRequest } from '../db/page'

/**
 * What each message is for: one per flow of CONTRACT section 14, the old address's notice of
 * an email change asked for, and its notice of a change made, with the undo link (section 17).
 */
export const MAIL_FLOWS = [
  'verify-email',
  'password-reset',
  'magic-link',
  'email-change',
  'email-changed',
  'invitation',
  'email-change-undo',
] as const
export type MailFlow = (typeof MAIL_FLOWS)[number]

/**
 * `requested` was asked for by a request and is written next, off the request path (so that
 * an address with an account and one without cost the request the same),
 * `pending` waits for a first or a further attempt (or for a mail server: without
 * `--smtp-url` mail stays pending), `sent` was taken by the mail server, `failed` was refused
 * for good or ran out of attempts (a resend makes it pending again), `suppressed` was asked for
 * but not written (no account has the address): it is kept so that the limits count it and an
 * admin sees who asked.
 */
export const MAIL_STATUSES = ['requested', 'pending', 'sent', 'failed', 'suppressed'] as const
export type MailStatus = (typeof MAIL_STATUSES)[number]

/** A message as the flows write it. */
export interface NewMail {
  flow: MailFlow
  to: string
  subject: string
  text: string
  html: string
  /** The Message-ID header (`<random@host>`), fixed now so a resend carries the same. */
  messageId: string
  /** Who asked for it (the per-IP limit counts it); null when no request did. */
  clientIp: string | null
}

/**
 * A message a request asked for, before anything about the address is read: the request
 * writes only this (the same for every address), and the worker writes the message or
 * suppresses it.
 */
export interface MailRequest {
  flow: MailFlow
  to: string
  clientIp: string | null
  /** Where the message's links start (--public-url, or the loopback origin asked on). */
  linkBase: string
  messageId: string
}

/** A requested message claimed for writing. */
export interface RequestedMail extends MailRequest {
  id: number
}

/** A message's three parts, as a template renders them. */
export interface MailContent {
  subject: string
  text: string
  html: string
}

/** Who the limits count mail for: an address (compared without regard to case) or a client. */
export type MailCounter = { toKey: string } | { clientIp: string }

/** A message claimed for sending. */
export interface OutgoingMail {
  id: number
  messageId: string
  to: string
  subject: string
  text: string
  html: string
  attempts: number
}

/**
 * A message as `GET /mail` and `roster mail list` show it. The text body is shown until the
 * message is sent (a developer without a mail server follows the link from it); then it is
 * cleared, as it carries a single-use link.
 */
export interface MailView {
  id: number
  flow: MailFlow
  to: string
  subject: string
  status: MailStatus
  attempts: number
  last_error: string | null
  created_at: string
  sent_at: string | null
  text: string | null
}

/** The outbox's write in a unit of work: a message commits with the change that causes it. */
export interface MailWrites {
  enqueue(mail: NewMail): Promise<void>
  request(mail: MailRequest): Promise<void>
  /**
   * A requested message written: it becomes `pending`, addressed to `to`, the account's own
   * address (not the one typed: two addresses that fold alike may be two mailboxes).
   */
  fulfil(id: number, to: string, content: MailContent): Promise<void>
  /** A requested message not written (no account has the address…): `suppressed`, with why. */
  suppress(id: number, reason: string): Promise<void>
  /**
   * How many messages (suppressed ones too) were asked for since `since` (ISO 8601), and when
   * the oldest of them was: the limits' count, read in the unit that adds one more.
   */
  countSince(counter: MailCounter, since: string): Promise<{ count: number; oldest: string | null }>
}

/**
 * The mail outbox (its writes happen in units of work: MailWrites). Written for a database
 * without a single writer: `claimDue` hands a message
 * to one worker at a time (on a shared database a lease, until `leaseUntil`, that another
 * instance's worker skips until it lapses, so an instance that dies while sending loses
 * nothing; on SQLite, one worker per file, a claim is a read), and each outcome ends the claim.
 * The worker chooses the lease: it must outlast the work done under it.
 */
export interface MailOutbox {
  /** Up to `limit` requested messages, the oldest first, claimed for writing. */
  claimRequested(limit: number, leaseUntil: number): Promise<RequestedMail[]>
  /** Up to `limit` pending messages due now, the earliest first, claimed for sending. */
  claimDue(limit: number, leaseUntil: number): Promise<OutgoingMail[]>
  /** The mail server took it: `sent`, its bodies cleared. */
  markSent(id: number): Promise<void>
  /**
   * An attempt failed; `retryAt` (epoch ms) null means no more attempts (`failed`). A message
   * no longer pending (another worker sent it meanwhile) stays as it is.
   */
  markFailed(id: number, error: string, retryAt: number | null): Promise<void>
  /**
   * When the next message falls due (epoch ms), or null when none waits: a requested one, or
   * (with `sending`) a pending one too.
   */
  earliestDue(sending: boolean): Promise<number | null>
  /**
   * Schedules a failed message for another attempt now, with a fresh count of attempts.
   * `missing` when there is no such message, `not-failed` when it is pending or sent.
   */
  resend(id: number): Promise<MailView | 'missing' | 'not-failed'>
  get(id: number): Promise<MailView | null>
  /** A page of messages, newest first; only those with `status` when it is given. */
  list(request: ListRequest, status?: MailStatus): Promise<{ data: MailView[]; total: number }>
}

/** An outbox row as both databases' claims read it. */
export interface OutgoingRow {
  id: number
  message_id: string
  to_address: string
  subject: string
  text_body: string | null
  html_body: string | null
  attempts: number
}

export function outgoingOfRow(row: OutgoingRow): OutgoingMail {
  return {
    id: row.id,
    messageId: row.message_id,
    to: row.to_address,
    subject: row.subject,
    text: row.text_body ?? '',
    html: row.html_body ?? '',
    attempts: row.attempts,
  }
}

/** A requested row as both databases' claims read it. */
export interface RequestedRow {
  id: number
  flow: MailFlow
  to_address: string
  client_ip: string | null
  link_base: string | null
  message_id: string
}

export function requestedOfRow(row: RequestedRow): RequestedMail {
  return {
    id: row.id,
    flow: row.flow,
    to: row.to_address,
    clientIp: row.client_ip,
    linkBase: row.link_base ?? '',
    messageId: row.message_id,
  }
}
