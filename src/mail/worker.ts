import type { Logger } from '../log'
import { type MailTransport, PermanentMailError } from '../smtp/transport'
import type { Timers } from '../timers'
import type { MailOutbox, OutgoingMail, RequestedMail } from './outbox'

export interface MailRetryPolicy {
  /** Delay before the first retry; each further one doubles it. */
  baseMs: number
  /** The longest delay between two attempts. */
  capMs: number
  /** After this many failed attempts the message is `failed` and not tried again. */
  maxAttempts: number
}

/**
 * 2 s, 4 s, 8 s … then hourly: a mail server that restarts loses a few seconds, one that is
 * down for an afternoon still gets the mail (fifteen attempts over about five hours).
 */
export const DEFAULT_MAIL_RETRY: MailRetryPolicy = {
  baseMs: 2000,
  capMs: 60 * 60 * 1000,
  maxAttempts: 15,
}

/** Messages claimed at once. */
const BATCH_SIZE = 16
/** The pause after the database refused the worker's write. */
const STORAGE_RETRY_MS = 1000

/**
 * Writes the messages requests asked for (`prepare`: the flow reads the account, issues the
 * token, renders the message, all in one unit) and sends the outbox's due messages, off the
 * request path, one at a time, oldest due first. Without a transport (no --smtp-url) it only
 * writes them: they wait in the outbox. It is woken after a message is committed and at start
 * (what a crash or a stop left). A message is
 * marked sent once the mail server has taken it; a refusal for good (5xx) marks it failed; any
 * other failure is retried with exponential backoff. The one window for a second copy is a
 * crash between the server's "250 OK" and the mark: the copy carries the same Message-ID.
 */
export class MailWorker {
  retry: MailRetryPolicy = DEFAULT_MAIL_RETRY
  /**
   * How often to look for due messages when none is known here (a shared outbox, where other
   * instances write them); null for an outbox only this process writes.
   */
  pollMs: number | null = null
  /** Called after each attempt (for metrics). */
  onAttempt: (outcome: 'sent' | 'retry' | 'failed') => void = () => {}
  private draining: Promise<void> | null = null
  private cancelTimer: (() => void) | null = null
  private timerAt = 0
  private stopped = true

  constructor(
    private readonly outbox: MailOutbox,
    private readonly transport: MailTransport | null,
    private readonly from: string,
    private readonly timers: Timers,
    private readonly log: Logger,
    private readonly prepare: (request: RequestedMail) => Promise<void>,
  ) {}

  /** Whether messages are sent (a mail server is configured), not only written. */
  private get sending(): boolean {
    return this.transport !== null
  }

  start(): void {
    this.stopped = false
    this.wake()
  }

  /** Something new may be due: send it soon (after the current turn, so after the answer). */
  wake(): void {
    if (this.stopped) return
    this.schedule(0)
  }

  /** Stops taking new messages; resolves when the one being sent has gone or failed. */
  async stop(): Promise<void> {
    this.stopped = true
    this.cancelTimer?.()
    this.cancelTimer = null
    await this.draining
    this.transport?.close()
  }

  /** Resolves when nothing is due and nothing is being sent (for tests). */
  async settled(): Promise<void> {
    for (;;) {
      await this.draining
      await Bun.sleep(1)
      const due = await this.outbox.earliestDue(this.sending)
      if (this.draining === null && (due === null || due > this.timers.now())) return
    }
  }

  private schedule(delayMs: number): void {
    const at = this.timers.now() + delayMs
    // A sooner wake-up stands: a stream of new mail must not keep pushing the sending back.
    if (this.cancelTimer !== null && this.timerAt <= at) return
    this.cancelTimer?.()
    this.timerAt = at
    const wait = (run: () => void) => {
      if (delayMs > 0) return this.timers.after(delayMs, run)
      const timer = setTimeout(run, 0)
      return () => clearTimeout(timer)
    }
    this.cancelTimer = wait(() => {
      this.cancelTimer = null
      let storageFailed = false
      this.draining ??= this.drain()
        .catch((error: unknown) => {
          storageFailed = true
          this.log.error('mail worker could not store an outcome; retrying in 1 s', {
            error: error instanceof Error ? error.message : String(error),
          })
        })
        .finally(() => {
          this.draining = null
          if (storageFailed && !this.stopped) this.schedule(STORAGE_RETRY_MS)
          else void this.scheduleNext()
        })
    })
  }

  private async scheduleNext(): Promise<void> {
    if (this.stopped) return
    const due = await this.outbox.earliestDue(this.sending).catch(() => null)
    const poll = this.pollMs === null ? null : this.timers.now() + this.pollMs
    const next = due === null ? poll : poll === null ? due : Math.min(due, poll)
    if (next !== null) this.schedule(Math.max(0, next - this.timers.now()))
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const requested = await this.outbox.claimRequested(BATCH_SIZE)
      for (const request of requested) await this.prepare(request)
      const due = this.transport === null ? [] : await this.outbox.claimDue(BATCH_SIZE)
      if (requested.length === 0 && due.length === 0) return
      for (const [index, mail] of due.entries()) {
        if (this.stopped) {
          await this.outbox.release(due.slice(index).map((left) => left.id))
          return
        }
        await this.attempt(this.transport as MailTransport, mail)
      }
    }
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
    this.onAttempt('sent')
  }

  private async recordFailure(mail: OutgoingMail, error: unknown): Promise<void> {
    const attempts = mail.attempts + 1
    const message = error instanceof Error ? error.message : String(error)
    const final = error instanceof PermanentMailError || attempts >= this.retry.maxAttempts
    const retryAt = final
      ? null
      : this.timers.now() + Math.min(this.retry.capMs, this.retry.baseMs * 2 ** (attempts - 1))
    await this.outbox.markFailed(mail.id, message, retryAt)
    this.onAttempt(final ? 'failed' : 'retry')
    this.log.warn('mail not sent', {
      mail_id: mail.id,
      attempts,
      error: message,
      retry_at: retryAt === null ? null : new Date(retryAt).toISOString(),
    })
  }
}
