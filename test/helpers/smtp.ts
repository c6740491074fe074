import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

/** A message as the test SMTP server received it: parsed by a real MIME parser. */
export interface ReceivedMail {
  to: string
  from: string
  subject: string
  messageId: string
  text: string
  html: string
  /** The first link in the text part. */
  link: string | null
  parsed: ParsedMail
}

/**
 * A real SMTP server on a free loopback port (the `smtp-server` package speaks the protocol;
 * `mailparser` reads what arrives). It can refuse the next messages with an SMTP reply (4xx:
 * try later; 5xx: never), and go down and come back on the same port.
 */
export async function startSmtpServer(options: { auth?: { user: string; pass: string } } = {}) {
  const received: ReceivedMail[] = []
  const refusals: { code: number; message: string }[] = []
  let stalls = 0
  let stalled = 0
  const waiters: (() => void)[] = []
  const make = () =>
    new SMTPServer({
      // No certificate here: a plain session (production servers offer STARTTLS, which
      // nodemailer takes when offered).
      disabledCommands: options.auth === undefined ? ['STARTTLS', 'AUTH'] : ['STARTTLS'],
      allowInsecureAuth: true,
      authOptional: options.auth === undefined,
      logger: false,
      onAuth(auth, _session, callback) {
        const ok = auth.username === options.auth?.user && auth.password === options.auth?.pass
        callback(
          ok ? null : new Error('535 bad credentials'),
          ok ? { user: auth.username } : undefined,
        )
      },
      onData(stream, session, callback) {
        if (stalls > 0) {
          // Takes the message and never answers: the sender hangs until it gives up or dies.
          stalls -= 1
          stream.resume()
          stream.on('end', () => {
            stalled += 1
          })
          return
        }
        const refusal = refusals.shift()
        if (refusal !== undefined) {
          stream.resume()
          stream.on('end', () =>
            callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code })),
          )
          return
        }
        simpleParser(stream)
          .then((parsed) => {
            const text = parsed.text ?? ''
            received.push({
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address).join(','),
              from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
              subject: parsed.subject ?? '',
              messageId: parsed.messageId ?? '',
              text,
              html: typeof parsed.html === 'string' ? parsed.html : '',
              link: /https?:\/\/\S+/.exec(text)?.[0] ?? null,
              parsed,
            })
            for (const wake of waiters.splice(0)) wake()
            callback()
          })
          .catch((error: Error) => callback(error))
      },
    })
  let server = make()
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.on('error', reject)
      server.listen(port, '127.0.0.1', () => resolve((server.server.address() as AddressInfo).port))
    })
  const port = await listen(0)
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  const credentials =
    options.auth === undefined
      ? ''
      : `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@`
  return {
    port,
    url: `smtp://${credentials}127.0.0.1:${port}`,
    received,
    /** The next `count` messages get this reply instead of 250. */
    refuseNext(code: number, message: string, count = 1) {
      for (let i = 0; i < count; i++) refusals.push({ code, message: `${code} ${message}` })
    },
    /** The next `count` messages are taken and never answered (a sender stuck mid-send). */
    stallNext(count = 1) {
      stalls += count
    },
    /** How many messages were taken and left unanswered. */
    get stalled() {
      return stalled
    },
    /** Resolves once `count` messages in all have arrived (rejects after `ms`). */
    async waitFor(count: number, ms = 10_000): Promise<ReceivedMail[]> {
      const deadline = Date.now() + ms
      while (received.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${count} messages, ${received.length} arrived in ${ms} ms`)
        }
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 50)
        })
      }
      return received
    },
    down: close,
    /** Listens again on the same port. */
    async up() {
      server = make()
      await listen(port)
    },
    async [Symbol.asyncDispose]() {
      await close().catch(() => {})
    },
  }
}

/**
 * A mail server that accepts connections and hangs: a plain TCP server in front of `target`'s
 * port. While `hang()` holds, a connection gets nothing, never a greeting (the client gives up
 * or dies); after `slow(ms)`, each new connection waits `ms` and is then joined to the real
 * SMTP server, which greets and takes the message.
 */
export async function startHangingFront(target: { port: number }) {
  let delayMs: number | null = null
  let held = 0
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    sockets.add(client)
    client.on('error', () => {})
    client.on('close', () => sockets.delete(client))
    if (delayMs === null) {
      held += 1
      return
    }
    const join = setTimeout(() => {
      const upstream = connect(target.port, '127.0.0.1')
      sockets.add(upstream)
      upstream.on('error', () => client.destroy())
      upstream.on('close', () => {
        sockets.delete(upstream)
        client.destroy()
      })
      client.on('close', () => upstream.destroy())
      client.pipe(upstream).pipe(client)
    }, delayMs)
    client.on('close', () => clearTimeout(join))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `smtp://127.0.0.1:${port}`,
    /** How many connections were accepted and never greeted. */
    get held() {
      return held
    },
    /** New connections are held without a greeting (the default). */
    hang() {
      delayMs = null
    },
    /** New connections are greeted after `ms`, by the real server. */
    slow(ms: number) {
      delayMs = ms
    },
    async [Symbol.asyncDispose]() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
