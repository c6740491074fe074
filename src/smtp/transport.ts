/** One message as it leaves: the outbox's row with the sender the config names. */
export interface Envelope {
  from: string
  to: string
  subject: string
  text: string
  html: string
  /** The Message-ID header, fixed when the message was written: a resend carries the same. */
  messageId: string
}

/** Where mail goes. `send` resolves once the mail server has taken the message. */
export interface MailTransport {
  /** `send` settles within this many ms, whatever the server does (--smtp-timeout). */
  readonly limitMs: number
  send(envelope: Envelope): Promise<void>
  close(): void
}

/**
 * The mail server refused the message for good (an SMTP 5xx answer: no such mailbox, policy):
 * trying again would be refused again. Anything else a send throws is worth another attempt.
 */
export class PermanentMailError extends Error {}

/**
 * SMTP through nodemailer, the Node ecosystem's SMTP client (STARTTLS, AUTH, pooling, the
 * SMTP reply codes kept on its errors). `smtps://` speaks TLS from the start; `smtp://` upgrades
 * with STARTTLS when the server offers it. The library is loaded on first use, so a server
 * that sends no mail never loads it.
 *
 * A send ends within `limitMs` however the server behaves: nodemailer's own timeouts each bound
 * one wait (connecting, the greeting, an idle socket), so a server that answers slowly but
 * keeps answering could hold a send for ever; at the limit the send is aborted, which closes
 * its connection before anything more is written. The outbox's lease relies on this bound.
 */
export function createSmtpTransport(url: string, limitMs: number): MailTransport {
  type Transporter = import('nodemailer').Transporter
  let transporter: Promise<Transporter> | null = null
  const open = async (): Promise<Transporter> => {
    const nodemailer = (await import('nodemailer')).default
    return nodemailer.createTransport({
      url,
      connectionTimeout: Math.min(10_000, limitMs),
      greetingTimeout: Math.min(10_000, limitMs),
      socketTimeout: Math.min(20_000, limitMs),
    } as Parameters<typeof nodemailer.createTransport>[0])
  }
  return {
    limitMs,
    async send(envelope) {
      transporter ??= open()
      const signal = AbortSignal.timeout(limitMs)
      try {
        await (await transporter).sendMail({
          from: envelope.from,
          to: envelope.to,
          subject: envelope.subject,
          text: envelope.text,
          html: envelope.html,
          messageId: envelope.messageId,
          signal,
        })
      } catch (error) {
        if (signal.aborted) {
          throw new Error(`the mail server did not take the message within ${limitMs / 1000} s`)
        }
        throw classified(error)
      }
    },
    close() {
      void transporter?.then((open) => open.close())
    },
  }
}

/** A 5xx reply is the server's final word; a 4xx, a timeout or a refused connection is not. */
function classified(error: unknown): Error {
  const code = (error as { responseCode?: unknown }).responseCode
  const message = error instanceof Error ? error.message : String(error)
  if (typeof code === 'number' && code >= 500 && code < 600) return new PermanentMailError(message)
  return error instanceof Error ? error : new Error(message)
}
