import type { Transaction } from '../db/unit'
import { AppError, type ErrorCode } from '../errors/errors'
import type { MailFlow, MailWrites } from '../mail/outbox'
import { emailKey, type UserRecord } from '../users/records'
import type { UserStore, UserWrites } from '../users/store'
import { render, type Template, type TemplateValues } from './templates'
import {
  type AccountTokenWrites,
  newAccountToken,
  TOKEN_TTL_MS,
  type TokenFlow,
  type TokenRefusal,
  type UsedToken,
} from './tokens'

/** The stores a flow's unit of work writes. */
export type FlowStores = { users: UserWrites; accountTokens: AccountTokenWrites; mail: MailWrites }

/** Who asked, as the route knows it: the client's address and where links must point. */
export interface Asker {
  clientIp: string | null
  /** The public base URL links are built on (--public-url, else the request's origin). */
  linkBase: string
}

/**
 * How much mail may be asked for. Per address: a mail bomb against one mailbox is capped at
 * 5 messages an hour, whatever asks for them; per client IP: 20 requests an hour. Both count
 * the outbox's rows (suppressed ones too), so on PostgreSQL every instance counts the same.
 */
export const MAIL_LIMITS = {
  perAddress: { count: 5, windowMs: 60 * 60 * 1000 },
  perClient: { count: 20, windowMs: 60 * 60 * 1000 },
} as const

export interface AccountFlowsOptions {
  transaction: Transaction<FlowStores>
  users: Pick<UserStore, 'get' | 'byEmail'>
  templates: Record<MailFlow, Template>
  /** The host part of Message-IDs (the --public-url host, or localhost). */
  messageHost: string
  now: () => Date
  /** Called after a message is committed (wakes the mail worker). */
  onMail: () => void
}

/** The mail flows of CONTRACT section 14 (verification and password reset so far). */
export interface AccountFlows {
  /**
   * Mails a verification link to the user's address: the signed-in user's (`userId`), or the
   * account of `email` (asked for without signing in, when --require-verified-email keeps the
   * user from signing in). Resolves the same way whether or not the address has an account, or
   * is verified already; RATE_LIMITED over the limits.
   */
  requestVerification(target: { userId: number } | { email: string }, asker: Asker): Promise<void>
  /** Spends a verification token and marks the address verified. */
  confirmVerification(token: string): Promise<UserRecord>
  /** Mails a reset link when `email` has an account; resolves the same way when it has none. */
  requestPasswordReset(email: string, asker: Asker): Promise<void>
  /**
   * Spends a reset token and sets the password (the hash is made by the caller): every session
   * and token of the account ends, and so do the other links mailed to it. Following the link
   * proves the mailbox, so the address counts as verified.
   */
  confirmPasswordReset(token: string, passwordHash: string): Promise<UserRecord>
}

const REFUSALS: Record<TokenRefusal, { code: ErrorCode; message: string }> = {
  unknown: { code: 'TOKEN_INVALID', message: 'This link is not valid; ask for a new one' },
  used: { code: 'TOKEN_USED', message: 'This link was used already; ask for a new one' },
  expired: { code: 'TOKEN_EXPIRED', message: 'This link has expired; ask for a new one' },
}

/** The error a refused token is answered with. */
export function tokenRefused(refusal: TokenRefusal): AppError {
  const { code, message } = REFUSALS[refusal]
  return new AppError(code, message)
}

/** Link paths, one per flow: pages a browser can follow (CONTRACT section 14). */
const LINK_PATHS: Record<TokenFlow, string> = {
  'verify-email': '/auth/verify-email',
  'password-reset': '/auth/password-reset',
  'magic-link': '/auth/magic-link',
  'email-change': '/auth/email-change',
  invitation: '/auth/invitation',
}

export function createAccountFlows(options: AccountFlowsOptions): AccountFlows {
  const { transaction, users, templates, now } = options

  /** RATE_LIMITED when the address or the client has had its share of mail this window. */
  async function withinLimits(mail: MailWrites, to: string, clientIp: string | null) {
    const at = now().getTime()
    const checks = [
      { counter: { toKey: emailKey(to) }, limit: MAIL_LIMITS.perAddress },
      ...(clientIp === null ? [] : [{ counter: { clientIp }, limit: MAIL_LIMITS.perClient }]),
    ]
    for (const { counter, limit } of checks) {
      const since = new Date(at - limit.windowMs).toISOString()
      const { count, oldest } = await mail.countSince(counter, since)
      if (count < limit.count) continue
      const freedAt = Date.parse(oldest ?? since) + limit.windowMs
      const retryAfterS = Math.max(1, Math.ceil((freedAt - at) / 1000))
      throw new AppError('RATE_LIMITED', 'Too many messages asked for; try again later', [], {
        'retry-after': String(retryAfterS),
      })
    }
  }

  /** One token and its message, written together in the unit `tx`. */
  async function sendToken(
    tx: FlowStores,
    flow: TokenFlow,
    user: { id: number; name: string },
    to: string,
    asker: Asker,
  ): Promise<void> {
    const { token, tokenHash } = newAccountToken()
    const at = now().getTime()
    const ttl = TOKEN_TTL_MS[flow]
    await tx.accountTokens.issue({
      userId: user.id,
      flow,
      tokenHash,
      codeHash: null,
      email: to,
      createdAt: at,
      expiresAt: at + ttl,
    })
    const link = `${asker.linkBase}${LINK_PATHS[flow]}?token=${token}`
    const values: TemplateValues = {
      name: user.name,
      email: to,
      link,
      expires_in: inWords(ttl),
      code: '',
      new_email: '',
    }
    await tx.mail.enqueue({
      flow,
      to,
      ...render(templates[flow], values),
      messageId: `<${crypto.randomUUID()}@${options.messageHost}>`,
      clientIp: asker.clientIp,
    })
  }

  /**
   * A request's unit: the limits, then either the message or a suppressed row, so a known and
   * an unknown address cost the same writes and the same one commit.
   */
  async function request(
    flow: TokenFlow,
    to: string,
    recipient: { id: number; name: string } | null,
    asker: Asker,
    suppressedBecause: string,
  ): Promise<void> {
    const sent = await transaction(async (tx) => {
      await withinLimits(tx.mail, to, asker.clientIp)
      if (recipient === null) {
        await tx.mail.suppress({ flow, to, clientIp: asker.clientIp, reason: suppressedBecause })
        return false
      }
      await sendToken(tx, flow, recipient, to, asker)
      return true
    })
    if (sent) options.onMail()
  }

  async function spend(tx: FlowStores, flow: TokenFlow, token: string): Promise<UsedToken> {
    const used = await tx.accountTokens.use(flow, hashOf(token), now().getTime())
    if (typeof used === 'string') throw tokenRefused(used)
    return used
  }

  return {
    async requestVerification(target, asker) {
      const user =
        'userId' in target ? await users.get(target.userId) : await userByEmail(users, target.email)
      const to = user?.email ?? ('email' in target ? target.email : '')
      const pending = user !== null && user.email_verified_at === null
      await request(
        'verify-email',
        to,
        pending ? user : null,
        asker,
        user === null ? 'no account has this address' : 'the address is verified already',
      )
    },

    async confirmVerification(token) {
      return await transaction(async (tx) => {
        const used = await spend(tx, 'verify-email', token)
        const user = await tx.users.verifyEmail(used.userId, used.email)
        // The account has left the address since (its tokens ended then): nothing to verify.
        if (user === null) throw tokenRefused('used')
        return user
      })
    },

    async requestPasswordReset(email, asker) {
      const user = await userByEmail(users, email)
      await request(
        'password-reset',
        user?.email ?? email,
        user,
        asker,
        'no account has this address',
      )
    },

    async confirmPasswordReset(token, passwordHash) {
      return await transaction(async (tx) => {
        const used = await spend(tx, 'password-reset', token)
        await tx.users.update(used.userId, { passwordHash }, { versions: null })
        return (
          (await tx.users.verifyEmail(used.userId, used.email)) ??
          (await tx.users.update(used.userId, {}, { versions: null }))
        )
      })
    },
  }
}

async function userByEmail(
  users: Pick<UserStore, 'get' | 'byEmail'>,
  email: string,
): Promise<UserRecord | null> {
  const found = await users.byEmail(email)
  return found === null ? null : await users.get(found.id)
}

function hashOf(token: string): string {
  return Bun.SHA256.hash(token, 'hex')
}

/** "15 minutes", "7 days": how long a link lasts, for the message. */
function inWords(ms: number): string {
  const minutes = Math.round(ms / 60_000)
  if (minutes < 120) return `${minutes} minutes`
  const hours = Math.round(minutes / 60)
  if (hours < 48) return `${hours} hours`
  return `${Math.round(hours / 24)} days`
}
