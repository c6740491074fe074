import type { AuditSource } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import { sha256Hex } from '../auth/tokens'
import type { Transaction } from '../db/unit'
import { fieldDetail } from '../errors/details'
import { AppError, conflict, type ErrorCode, notFound, validationFailed } from '../errors/errors'
import type { FactorWrites } from '../factors/store'
import type { MailContent, MailFlow, MailWrites, RequestedMail } from '../mail/outbox'
import { emailKey, type UserRecord } from '../users/records'
import type { UserStore, UserUnitWrites, UserWrites } from '../users/store'
import { render, type Template, type TemplateValues } from './templates'
import {
  type AccountTokenWrites,
  codeHashOf,
  newAccountToken,
  newCode,
  TOKEN_TTL_MS,
  type TokenFlow,
  type TokenRefusal,
  type UsedToken,
} from './tokens'

/** The stores a flow's unit of work writes. */
export type FlowStores = {
  users: UserUnitWrites
  accountTokens: AccountTokenWrites
  mail: MailWrites
  /** An undo removes the factors the account holds (a taker may have added its own). */
  factors: Pick<FactorWrites, 'deletePasskeys' | 'deleteTotp' | 'deleteRecoveryCodes'>
  audit: AuditWrites
}

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
  /** Called after a message is asked for (wakes the mail worker). */
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
  confirmVerification(token: string, by: AuditSource): Promise<UserRecord>
  /** Mails a reset link when `email` has an account; resolves the same way when it has none. */
  requestPasswordReset(email: string, asker: Asker): Promise<void>
  /**
   * Spends a reset token and sets the password (the hash is made by the caller): every session
   * and token of the account ends, and so do the other links mailed to it. Following the link
   * proves the mailbox, so the address counts as verified.
   */
  confirmPasswordReset(token: string, passwordHash: string, by: AuditSource): Promise<UserRecord>
  /**
   * Writes a message a request asked for (the mail worker calls it, off the request path):
   * reads the account, and in one unit issues the token and writes the message, or suppresses
   * it with why (no account has the address, it is verified already).
   */
  prepare(requested: RequestedMail): Promise<void>
  /** Mails a sign-in link and a 6-digit code when `email` has an account (as a reset does). */
  requestMagicLink(email: string, asker: Asker): Promise<void>
  /**
   * Spends a magic link, or a code for an address (5 tries, counted even when wrong), and
   * answers whom it signs in; the caller issues the credentials, as /login does. Following it
   * proves the mailbox, so the address counts as verified.
   */
  confirmMagicLink(
    proof: { token: string } | { email: string; code: string },
    by: AuditSource,
  ): Promise<UserRecord>
  /**
   * Mails a confirmation link to `newEmail` and a notice to the user's current address.
   * CONFLICT when another account has `newEmail` (the signed-in user could find that out by
   * changing its address anyway); VALIDATION_ERROR when it is the current one.
   */
  requestEmailChange(userId: number, newEmail: string, asker: Asker): Promise<void>
  /**
   * Spends an email-change link: the address becomes the new one, verified, and the old one is
   * mailed a notice with a link that undoes the change (7 days).
   */
  confirmEmailChange(token: string, by: AuditSource, asker: Asker): Promise<UserRecord>
  /**
   * Spends an undo link (CONTRACT section 17): the address goes back to the one it was mailed
   * to, verified, and the account is signed out everywhere (every session and token, every
   * other mailed link). CONFLICT when another account has that address now: nothing changes,
   * and the link still works.
   */
  undoEmailChange(token: string, by: AuditSource): Promise<UserRecord>
  /**
   * A change the account makes to itself with its own credential (PUT or PATCH /users/{id}):
   * `write` runs in a unit of work, and when it moves the address, the old one is mailed the
   * notice with its undo link in the same unit, as after a confirmed email change.
   */
  changeOwnAccount(
    userId: number,
    asker: Asker,
    write: (users: UserWrites) => Promise<UserRecord>,
  ): Promise<UserRecord>
  /** Mails an invitation to the user's address (NOT_FOUND when there is no such user). */
  invite(userId: number, asker: Asker, refuseIfAdmin?: Error): Promise<void>
  /** Spends an invitation: the password is set, and the address counts as verified. */
  confirmInvitation(token: string, passwordHash: string, by: AuditSource): Promise<UserRecord>
}

/** The flows anyone may ask for by naming an address (written off the request path). */
const REQUESTED_BY_ADDRESS = new Set<MailFlow>(['verify-email', 'password-reset', 'magic-link'])
/** The flows that end in a sign-in or a new password: not mailed to a deactivated account. */
const SIGN_IN_FLOWS = new Set<MailFlow>(['password-reset', 'magic-link'])

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
  'email-change-undo': '/auth/email-change-undo',
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

  /**
   * Issues a token of `flow` for `user`, sent to `to`, in the unit `tx`, and renders its
   * message (a magic link carries a 6-digit code too).
   */
  async function issueToken(
    tx: FlowStores,
    flow: TokenFlow,
    user: { id: number; name: string },
    to: string,
    linkBase: string,
    extra: Partial<TemplateValues> = {},
  ): Promise<MailContent> {
    const { token, tokenHash } = newAccountToken()
    const code = flow === 'magic-link' ? newCode(tokenHash) : null
    const at = now().getTime()
    const ttl = TOKEN_TTL_MS[flow]
    await tx.accountTokens.issue({
      userId: user.id,
      flow,
      tokenHash,
      codeHash: code?.codeHash ?? null,
      email: to,
      createdAt: at,
      expiresAt: at + ttl,
    })
    return render(templates[flow], {
      name: user.name,
      email: to,
      link: `${linkBase}${LINK_PATHS[flow]}?token=${token}`,
      expires_in: inWords(ttl),
      code: code?.code ?? '',
      new_email: '',
      ...extra,
    })
  }

  /** One token and its message, written together in the unit `tx` (the requested row). */
  async function sendToken(
    tx: FlowStores,
    request: RequestedMail,
    flow: TokenFlow,
    user: { id: number; name: string; email: string },
  ): Promise<void> {
    const content = await issueToken(tx, flow, user, user.email, request.linkBase)
    await tx.mail.fulfil(request.id, user.email, content)
  }

  /** A message written now, in the unit `tx` (flows whose recipient the caller knows). */
  async function enqueue(
    tx: FlowStores,
    flow: MailFlow,
    to: string,
    content: MailContent,
    asker: Asker,
  ) {
    await tx.mail.enqueue({
      flow,
      to,
      ...content,
      messageId: `<${crypto.randomUUID()}@${options.messageHost}>`,
      clientIp: asker.clientIp,
    })
  }

  /**
   * A request's unit: the limits, then one requested row, whoever the address belongs to; the
   * worker writes the message (or suppresses it) next. Nothing here reads the account, so an
   * address with one and an address without one cost the request exactly the same.
   */
  async function request(flow: TokenFlow, to: string, asker: Asker): Promise<void> {
    await transaction(async (tx) => {
      await withinLimits(tx.mail, to, asker.clientIp)
      await tx.mail.request({
        flow,
        to,
        clientIp: asker.clientIp,
        linkBase: asker.linkBase,
        messageId: `<${crypto.randomUUID()}@${options.messageHost}>`,
      })
    })
    options.onMail()
  }

  /** Why a requested message is not written, or null when it is (and for whom). */
  async function recipientOf(
    request: RequestedMail,
  ): Promise<{ user: UserRecord } | { suppressed: string }> {
    const user = await userByEmail(users, request.to)
    if (user === null) return { suppressed: 'no account has this address' }
    // Its links would sign in or reset nothing it may use: sign-in is refused until restored.
    if (!user.active && SIGN_IN_FLOWS.has(request.flow)) {
      return { suppressed: 'the account is deactivated' }
    }
    if (request.flow === 'verify-email' && user.email_verified_at !== null) {
      return { suppressed: 'the address is verified already' }
    }
    if (!REQUESTED_BY_ADDRESS.has(request.flow)) {
      return { suppressed: `${request.flow} is not asked for by address` }
    }
    return { user }
  }

  /**
   * An undo's last step: every passkey, TOTP and recovery code of the account goes (audited as
   * factors.removed), in the undo's unit. Whoever moved the account could have added its own
   * (a fresh stolen token passes the factors' step-up); the owner signs in with its password
   * or a mailed link and enrols again.
   */
  async function removeFactors(tx: FlowStores, userId: number, by: AuditSource): Promise<void> {
    const passkeys = await tx.factors.deletePasskeys(userId)
    const totp = await tx.factors.deleteTotp(userId)
    await tx.factors.deleteRecoveryCodes(userId)
    if (passkeys === 0 && !totp) return
    await tx.audit.record(by, {
      action: 'factors.removed',
      target: { type: 'user', id: String(userId) },
      changes: { passkeys: { before: passkeys, after: 0 }, totp: { before: totp, after: false } },
    })
  }

  async function spend(tx: FlowStores, flow: TokenFlow, token: string): Promise<UsedToken> {
    const used = await tx.accountTokens.use(flow, sha256Hex(token), now().getTime())
    if (typeof used === 'string') throw tokenRefused(used)
    return used
  }

  return {
    async requestVerification(target, asker) {
      // A signed-in user's own address (nothing to hide from it); else the address as given.
      const to = 'email' in target ? target.email : (await users.get(target.userId))?.email
      if (to !== undefined) await request('verify-email', to, asker)
    },

    async confirmVerification(token, by) {
      return await transaction(async (tx) =>
        verified(tx, await spend(tx, 'verify-email', token), by),
      )
    },

    async requestPasswordReset(email, asker) {
      await request('password-reset', email, asker)
    },

    async prepare(requested) {
      const recipient = await recipientOf(requested)
      await transaction(async (tx) => {
        if ('suppressed' in recipient) await tx.mail.suppress(requested.id, recipient.suppressed)
        else await sendToken(tx, requested, requested.flow as TokenFlow, recipient.user)
      })
    },

    async confirmPasswordReset(token, passwordHash, by) {
      return await transaction((tx) => setPassword(tx, 'password-reset', token, passwordHash, by))
    },

    async requestMagicLink(email, asker) {
      await request('magic-link', email, asker)
    },

    async confirmMagicLink(proof, by) {
      if ('token' in proof) {
        return await transaction(async (tx) => {
          const used = await spend(tx, 'magic-link', proof.token)
          return await verified(tx, used, by)
        })
      }
      const account = await users.byEmail(proof.email)
      // The unit commits a wrong try too (it counts); the refusal is thrown after it. An
      // address without an account runs the same unit (user 0 has no codes), so the answer
      // takes as long as for a wrong code.
      const outcome = await transaction(async (tx) => {
        const used = await tx.accountTokens.useCode(
          account?.id ?? 0,
          (tokenHash) => codeHashOf(tokenHash, proof.code),
          now().getTime(),
        )
        return typeof used === 'string' ? used : await verified(tx, used, by)
      })
      if (typeof outcome === 'string') throw tokenRefused(outcome)
      return outcome
    },

    async requestEmailChange(userId, newEmail, asker) {
      const user = await users.get(userId)
      if (user === null) throw notFound('No user with this id')
      if (emailKey(newEmail) === emailKey(user.email)) {
        throw validationFailed([fieldDetail('new_email', 'is the current address', newEmail)])
      }
      if ((await users.byEmail(newEmail)) !== null) {
        throw conflict('A user with this email already exists', [
          fieldDetail('new_email', 'is already in use', newEmail),
        ])
      }
      await transaction(async (tx) => {
        await withinLimits(tx.mail, newEmail, asker.clientIp)
        const link = await issueToken(tx, 'email-change', user, newEmail, asker.linkBase)
        await enqueue(tx, 'email-change', newEmail, link, asker)
        const notice = render(templates['email-changed'], {
          name: user.name,
          email: user.email,
          link: '',
          expires_in: '',
          code: '',
          new_email: newEmail,
        })
        await enqueue(tx, 'email-changed', user.email, notice, asker)
      })
      options.onMail()
    },

    async confirmEmailChange(token, by, asker) {
      const user = await transaction(async (tx) => {
        const used = await spend(tx, 'email-change', token)
        const before = await tx.users.lockedAddress(used.userId)
        // CONFLICT if another account took the address meanwhile; the unit keeps the token.
        const holder = tokenHolder(used, by)
        await tx.users.update(used.userId, { email: used.email }, { versions: null }, holder)
        const user = await verified(tx, used, by)
        await mailUndo(tx, user, before, asker)
        return user
      })
      options.onMail()
      return user
    },

    async undoEmailChange(token, by) {
      return await transaction(async (tx) => {
        const used = await spend(tx, 'email-change-undo', token)
        // CONFLICT if another account took the old address meanwhile; the unit keeps the token.
        const changes = { email: used.email, signOut: true } as const
        await tx.users.update(used.userId, changes, { versions: null }, tokenHolder(used, by))
        // The undo links of later moves end (they lead back to addresses the account left after
        // this one); those of earlier moves stay, so a thief who moved the account twice cannot
        // spend the owner's link by undoing its own second move.
        await tx.accountTokens.revoke(
          used.userId,
          ['email-change-undo'],
          now().getTime(),
          used.createdAt,
        )
        await removeFactors(tx, used.userId, tokenHolder(used, by))
        return await verified(tx, used, by)
      })
    },

    async changeOwnAccount(userId, asker, write) {
      const user = await transaction(async (tx) => {
        const before = await tx.users.lockedAddress(userId)
        const after = await write(tx.users)
        await mailUndo(tx, after, before, asker)
        return after
      })
      options.onMail()
      return user
    },

    async invite(userId, asker, refuseIfAdmin) {
      const user = await users.get(userId)
      if (user === null) throw notFound('No user with this id')
      if (user.role === 'admin' && refuseIfAdmin !== undefined) throw refuseIfAdmin
      await transaction(async (tx) => {
        await withinLimits(tx.mail, user.email, null)
        const content = await issueToken(tx, 'invitation', user, user.email, asker.linkBase)
        await enqueue(tx, 'invitation', user.email, content, asker)
      })
      options.onMail()
    },

    async confirmInvitation(token, passwordHash, by) {
      return await transaction((tx) => setPassword(tx, 'invitation', token, passwordHash, by))
    },
  }

  /**
   * When `user`'s address moved from `before`, the notice to `before` with a link that undoes
   * the move (CONTRACT section 17), in the unit `tx`. Never held back by the mail limits: a
   * change must not go unannounced because somebody filled the old address's share.
   */
  async function mailUndo(tx: FlowStores, user: UserRecord, before: string | null, asker: Asker) {
    if (before === null || emailKey(before) === emailKey(user.email)) return
    const notice = await issueToken(tx, 'email-change-undo', user, before, asker.linkBase, {
      new_email: user.email,
    })
    await enqueue(tx, 'email-change-undo', before, notice, asker)
  }

  /** The user of a spent token with its address verified (it proved the mailbox). */
  async function verified(tx: FlowStores, used: UsedToken, by: AuditSource): Promise<UserRecord> {
    const user = await tx.users.verifyEmail(used.userId, used.email, tokenHolder(used, by))
    // The account left that address since (which ended its tokens): the token is spent.
    if (user === null) throw tokenRefused('used')
    return user
  }

  /**
   * Spends a reset or invitation token and sets the password: every session and token of the
   * account ends, and so do the other links mailed to it.
   */
  async function setPassword(
    tx: FlowStores,
    flow: 'password-reset' | 'invitation',
    token: string,
    passwordHash: string,
    by: AuditSource,
  ): Promise<UserRecord> {
    const used = await spend(tx, flow, token)
    await tx.users.update(used.userId, { passwordHash }, { versions: null }, tokenHolder(used, by))
    return await verified(tx, used, by)
  }
}

/** A mailed token's change is its holder's: the account it was mailed to, through `by`'s request. */
function tokenHolder(used: UsedToken, by: AuditSource): AuditSource {
  return { ...by, actor: { type: 'user', id: String(used.userId) } }
}

async function userByEmail(
  users: Pick<UserStore, 'get' | 'byEmail'>,
  email: string,
): Promise<UserRecord | null> {
  const found = await users.byEmail(email)
  return found === null ? null : await users.get(found.id)
}

/** "15 minutes", "7 days": how long a link lasts, for the message. */
function inWords(ms: number): string {
  const minutes = Math.round(ms / 60_000)
  if (minutes < 120) return `${minutes} minutes`
  const hours = Math.round(minutes / 60)
  if (hours < 48) return `${hours} hours`
  return `${Math.round(hours / 24)} days`
}
