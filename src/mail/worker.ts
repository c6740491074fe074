import type { Logger } from '../log'
import { type MailTransport, PermanentMailError } from '../smtp/transport'
import { DrainSchedule, type RetryPolicy, retryAt, type Timers } from '../timers'
import type { MailOutbox, OutgoingMail, RequestedMail } from './outbox'

/**
 * 2 s, 4 s, 8 s … then hourly: a mail server that restarts loses a few seconds, one that is
 * down for an afternoon still gets the mail (fifteen attempts over about five hours).
 */
export const DEFAULT_MAIL_RETRY: RetryPolicy = {
  baseMs: 2000,
  capMs: 60 * 60 * 1000,
  maxAttempts: 15,
}

/** Requested messages claimed at once for writing (database work: milliseconds each). */
const WRITE_BATCH = 16

/** How long a batch of requested messages is held for writing; a dead holder delays it this long. */
const WRITE_LEASE_MS = 60_000

/**
 * How long a message is held for its send: the transport's limit (within which a send ends,
 * whatever the server does) and a third more, at least a second, to store the outcome. 60 s for
 * the default 45 s.
 */
export function sendLeaseMs(sendLimitMs: number): number {
  return sendLimitMs + Math.max(1000, Math.ceil(sendLimitMs / 3))
}

/**
 * Writes the messages requests asked for (`prepare`: the flow reads the account, issues the
 * token, renders the message, all in one unit) and sends the outbox's due messages, off the
 * request path, one at a time, oldest due first. Without a transport (no --smtp-url) it only
 * writes them: they wait in the outbox. It is woken after a message is asked for and at start
 * (what a crash or a stop left). A message is marked sent once the mail server has taken it; a
 * refusal for good (5xx) marks it failed; any other failure is retried with exponential
 * backoff.
 *
 * Each message is claimed on its own, just before its send, under a lease that outlasts the
 * send (`sendLeaseMs`): the work a worker holds never outlives its lease, so on a shared
 * database no other instance takes a message while this one may still be sending it, however
 * slow the mail server (a batch claimed at once would wait behind the sends before it, and
 * could lapse while still held). The one window for a second copy is a crash (or a send cut
 * off at its limit) between the server's "250 OK" and the mark: the copy carries the same
 * Message-ID.
 */
export class MailWorker {
  retry: RetryPolicy = DEFAULT_MAIL_RETRY
  private readonly schedule: DrainSchedule

  constructor(
    private readonly outbox: MailOutbox,
    private readonly transport: MailTransport | null,
    private readonly from: string,
    private readonly timers: Timers,
    private readonly log: Logger,
    private readonly prepare: (request: RequestedMail) => Promise<void>,
  ) {
    // Without a transport only requested messages fall due: pending ones wait for a server.
    const sending = transport !== null
    this.schedule = new DrainSchedule(
      timers,
      () => this.drain(),
      () => outbox.earliestDue(sending),
      (error) =>
        log.error('mail worker could not store an outcome; retrying in 1 s', {
          error: error instanceof Error ? error.message : String(error),
        }),
    )
  }

  /**
   * How often to look for due messages when none is known here (a shared outbox, where other
   * instances write them); null for an outbox only this process writes.
   */
  set pollMs(ms: number | null) {
    this.schedule.pollMs = ms
  }

  start(): void {
    this.schedule.start()
  }

  /** Something new may be due: handle it soon (after the current turn, so after the answer). */
  wake(): void {
    this.schedule.wake()
  }

  /** Stops taking new messages; resolves when the one being sent has gone or failed. */
  async stop(): Promise<void> {
    await this.schedule.stop()
    this.transport?.close()
  }

  /** Resolves when nothing is due and nothing is being written or sent (for tests). */
  settled(): Promise<void> {
    return this.schedule.settled()
  }

  private async drain(): Promise<void> {
    const { transport } = this
    while (!this.schedule.stopped) {
      const wrote = await this.writeRequested()
      const sent = transport !== null && (await this.sendNext(transport))
      if (!wrote && !sent) return
    }
  }

  /** Writes a batch of requested messages; false when none was waiting. */
  private async writeRequested(): Promise<boolean> {
    const leaseUntil = this.timers.now() + WRITE_LEASE_MS
    const requested = await this.outbox.claimRequested(WRITE_BATCH, leaseUntil)
    for (const request of requested) await this.prepare(request)
    return requested.length > 0
  }

  /** Claims the next due message and tries it; false when none is due. */
  private async sendNext(transport: MailTransport): Promise<boolean> {
    const leaseUntil = this.timers.now() + sendLeaseMs(transport.limitMs)
    const [mail] = await this.outbox.claimDue(1, leaseUntil)
    if (mail === undefined) return false
    await this.attempt(transport, mail)
    return true
  }

  private async attempt(transport: MailTransport, mail: OutgoingMail): Promise<void> {
    try {
      await transport.send({
        from: this.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        messageId: mail.messageId,
      })
    } catch (error) {
      await this.recordFailure(mail, error)
      return
    }
    await this.outbox.markSent(mail.id)
  }

  private async recordFailure(mail: OutgoingMail, error: unknown): Promise<void> {
    const attempts = mail.attempts + 1
    const message = error instanceof Error ? error.message : String(error)
    // A 5xx is the server's last word; anything else is tried again while the policy allows.
    const nextAt =
      error instanceof PermanentMailError ? null : retryAt(this.retry, attempts, this.timers.now())
    await this.outbox.markFailed(mail.id, message, nextAt)
    this.log.warn('mail not sent', {
      mail_id: mail.id,
      attempts,
      error: message,
      retry_at: nextAt === null ? null : new Date(nextAt).toISOString(),
    })
  }
}
