import type { TokenRefusal } from '../accounts/tokens'
import type { AuditSource } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import { newSecret, sha256Hex } from '../auth/tokens'
import { UniqueViolation } from '../db/conflict'
import type { Transaction } from '../db/unit'
import { fieldDetail } from '../errors/details'
import { AppError, badRequest, notFound, validationFailed } from '../errors/errors'
import type { ChallengePurpose, FactorWrites, PasskeyRow } from './store'
import { matchingStep, newTotpSecret, otpauthUrl } from './totp'
import {
  assertionCounter,
  CEREMONY_TTL_MS,
  type CredentialJson,
  challengeHash,
  clientDataOf,
  counterWentBack,
  handleMatches,
  loginOptions,
  type RelyingParty,
  registrationOptions,
  verifyLogin,
  verifyRegistration,
} from './webauthn'

/** How many recovery codes a user holds (CONTRACT section 15). */
export const RECOVERY_CODE_COUNT = 10
/** How long an mfa_token waits for its code. */
export const MFA_TOKEN_TTL_MS = 5 * 60 * 1000
/** Wrong codes an mfa_token takes before it is spent. */
export const MAX_MFA_TRIES = 5
export const MFA_TOKEN_PREFIX = 'rmfa_'

/** A passkey as its owner sees it (never its key). */
export interface PasskeyView {
  id: number
  name: string
  created_at: string
  last_used_at: string | null
  backed_up: boolean
  /** Set when a sign-in showed a counter that went back: the passkey is refused since. */
  flagged_at: string | null
}

/** Which factors an account has, for its owner's Security page and an admin's view. */
export interface FactorStatus {
  totp: boolean
  passkeys: PasskeyView[]
  recovery_codes_left: number
}

/** What finishes the second step of a password sign-in. */
export type SecondStepAnswer = { code: string } | { recoveryCode: string }

const iso = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString())

export function passkeyView(row: PasskeyRow): PasskeyView {
  return {
    id: row.id,
    name: row.name,
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: iso(row.lastUsedAt),
    backed_up: row.backedUp,
    flagged_at: iso(row.flaggedAt),
  }
}

/** A recovery code as shown once: 10 characters in two groups, no look-alike letters. */
function newRecoveryCode(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789'
  const bytes = crypto.getRandomValues(new Uint8Array(10))
  const chars = [...bytes].map((byte) => alphabet[byte % alphabet.length])
  return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`
}

/** Codes are compared without case, spaces or dashes (as people type them). */
export function recoveryCodeHash(userId: number, code: string): string {
  return sha256Hex(`recovery:${userId}:${code.toLowerCase().replace(/[\s-]/g, '')}`)
}

const REFUSED: Record<TokenRefusal, { code: 'TOKEN_INVALID' | 'TOKEN_USED' | 'TOKEN_EXPIRED' }> = {
  unknown: { code: 'TOKEN_INVALID' },
  used: { code: 'TOKEN_USED' },
  expired: { code: 'TOKEN_EXPIRED' },
}

function ceremonyRefused(refusal: TokenRefusal, what: string): AppError {
  const said = { unknown: 'is not one roster issued', used: 'was used already', expired: 'expired' }
  return new AppError(REFUSED[refusal].code, `The ${what} ${said[refusal]}; start again`)
}

function clonedPasskey(): AppError {
  return new AppError(
    'INVALID_CREDENTIALS',
    'This passkey is refused: its signature counter went back, as a cloned authenticator’s does. Sign in another way and register it again',
  )
}

export interface SecondFactorDeps {
  transaction: Transaction<{ factors: FactorWrites; audit: AuditWrites }>
  clock: () => number
  party: RelyingParty
  /** The issuer authenticator apps show (the public host, or "roster"). */
  issuer: string
}

/**
 * Passkeys, TOTP and recovery codes (CONTRACT section 15): the rules over FactorWrites. Each
 * change and its audit event are one unit of work.
 */
export function createSecondFactors(deps: SecondFactorDeps) {
  const { transaction, clock, party } = deps
  const userTarget = (userId: number) => ({ type: 'user', id: String(userId) })

  async function newChallenge(purpose: ChallengePurpose, challenge: string, userId: number | null) {
    const at = clock()
    await transaction((tx) =>
      tx.factors.insertChallenge({
        hash: challengeHash(challenge),
        purpose,
        userId,
        createdAt: at,
        expiresAt: at + CEREMONY_TTL_MS,
      }),
    )
  }

  /** The ceremony a credential answers, spent in `tx` (so a failure later undoes nothing else). */
  async function spendCeremony(
    factors: FactorWrites,
    purpose: ChallengePurpose,
    credential: CredentialJson,
  ): Promise<{ challenge: string; origin: string; userId: number | null }> {
    const { challenge, origin } = clientDataOf(credential)
    if (!party.allows(origin)) {
      throw badRequest(
        `Passkeys are not accepted from ${origin}: see --public-url and --webauthn-origins`,
      )
    }
    const live = await factors.liveChallenge(purpose, challengeHash(challenge), clock())
    if (typeof live === 'string') throw ceremonyRefused(live, 'passkey challenge')
    if (!(await factors.spendChallenge(live.id, clock()))) {
      throw ceremonyRefused('used', 'passkey challenge')
    }
    return { challenge, origin, userId: live.userId }
  }

  async function recoveryCodes(factors: FactorWrites, userId: number): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
    await factors.replaceRecoveryCodes(
      userId,
      codes.map((code) => recoveryCodeHash(userId, code)),
      clock(),
    )
    return codes
  }

  return {
    /** A user's passkeys, oldest first (one read; status() reads TOTP and the codes too). */
    async passkeys(userId: number): Promise<PasskeyView[]> {
      return (await transaction((tx) => tx.factors.passkeysOf(userId))).map(passkeyView)
    },

    async status(userId: number): Promise<FactorStatus> {
      return await transaction(async (tx) => {
        const totp = await tx.factors.totpOf(userId)
        return {
          totp: totp?.confirmedAt != null,
          passkeys: (await tx.factors.passkeysOf(userId)).map(passkeyView),
          recovery_codes_left: await tx.factors.recoveryCodesLeft(userId),
        }
      })
    },

    /** Whether a sign-in by password or mailed link must be followed by a TOTP code. */
    async hasSecondFactor(userId: number): Promise<boolean> {
      const totp = await transaction((tx) => tx.factors.totpOf(userId))
      return totp?.confirmedAt != null
    },

    /** A new secret to scan; 409 while a confirmed one exists (remove it first). */
    async enrolTotp(user: { id: number; email: string }) {
      const secret = newTotpSecret()
      const stored = await transaction((tx) => tx.factors.putPendingTotp(user.id, secret, clock()))
      if (!stored) {
        throw new AppError('CONFLICT', 'TOTP is on already; remove it (DELETE /auth/totp) first')
      }
      return { secret, otpauth_url: otpauthUrl(secret, user.email, deps.issuer) }
    },

    /** The first code proves the app has the secret: TOTP is on, with ten new recovery codes. */
    async confirmTotp(userId: number, code: string, by: AuditSource): Promise<string[]> {
      return await transaction(async (tx) => {
        const totp = await tx.factors.totpOf(userId)
        if (totp === null || totp.confirmedAt !== null) {
          throw new AppError(
            'CONFLICT',
            'There is no TOTP enrolment to confirm: POST /auth/totp/enroll first',
          )
        }
        const step = matchingStep(totp.secret, code.trim(), clock())
        if (step === null || !(await tx.factors.confirmTotp(userId, step, clock()))) {
          throw validationFailed([
            fieldDetail('code', 'is not the authenticator app’s current code'),
          ])
        }
        const codes = await recoveryCodes(tx.factors, userId)
        await tx.audit.record(by, { action: 'totp.enabled', target: userTarget(userId) })
        return codes
      })
    },

    async removeTotp(userId: number, by: AuditSource): Promise<void> {
      await transaction(async (tx) => {
        if (!(await tx.factors.deleteTotp(userId)))
          throw notFound('TOTP is not on for this account')
        // Recovery codes stand in for TOTP; without it they would be a password of their own.
        await tx.factors.deleteRecoveryCodes(userId)
        await tx.audit.record(by, { action: 'totp.disabled', target: userTarget(userId) })
      })
    },

    /** Ten new codes; the old ones, used or not, stop working. Only with TOTP on. */
    async regenerateRecoveryCodes(userId: number, by: AuditSource): Promise<string[]> {
      return await transaction(async (tx) => {
        const totp = await tx.factors.totpOf(userId)
        if (totp?.confirmedAt == null) {
          throw new AppError('CONFLICT', 'Recovery codes stand in for TOTP: turn TOTP on first')
        }
        const codes = await recoveryCodes(tx.factors, userId)
        await tx.audit.record(by, {
          action: 'recovery_codes.generated',
          target: userTarget(userId),
        })
        return codes
      })
    },

    /** The mfa_token a right password earns when TOTP is on (no session, no token yet). */
    async startSecondStep(userId: number): Promise<string> {
      const token = newSecret(MFA_TOKEN_PREFIX)
      const at = clock()
      await transaction((tx) =>
        tx.factors.insertChallenge({
          hash: sha256Hex(token),
          purpose: 'mfa',
          userId,
          createdAt: at,
          expiresAt: at + MFA_TOKEN_TTL_MS,
        }),
      )
      return token
    },

    /** Whose mfa_token this is (not spending it), or why it is refused (400 TOKEN_*). */
    async secondStepUser(token: string): Promise<number> {
      const live = await transaction((tx) =>
        tx.factors.liveChallenge('mfa', sha256Hex(token), clock()),
      )
      if (typeof live === 'string') throw ceremonyRefused(live, 'mfa_token')
      if (live.tries >= MAX_MFA_TRIES) throw ceremonyRefused('expired', 'mfa_token')
      return live.userId as number
    },

    /**
     * Tries a code or a recovery code against an mfa_token: right spends both (the token, and
     * the code's step or the recovery code), wrong counts a try (the 5th spends the token).
     * The unit commits either way, so a wrong try is never forgotten.
     */
    async finishSecondStep(
      token: string,
      answer: SecondStepAnswer,
    ): Promise<{ userId: number; method: 'totp' | 'recovery_code' } | { wrong: number }> {
      const outcome = await transaction(async (tx) => {
        const at = clock()
        const live = await tx.factors.liveChallenge('mfa', sha256Hex(token), at)
        if (typeof live === 'string') return live
        if (live.tries >= MAX_MFA_TRIES) return 'expired' as const
        const userId = live.userId as number
        const right =
          'code' in answer
            ? await takeCode(tx.factors, userId, answer.code, at)
            : await tx.factors.useRecoveryCode(
                userId,
                recoveryCodeHash(userId, answer.recoveryCode),
                at,
              )
        if (!right) {
          await tx.factors.countChallengeTry(live.id)
          return { wrong: userId }
        }
        if (!(await tx.factors.spendChallenge(live.id, at))) return 'used' as const
        return { userId, method: 'code' in answer ? ('totp' as const) : ('recovery_code' as const) }
      })
      if (typeof outcome === 'string') throw ceremonyRefused(outcome, 'mfa_token')
      return outcome
    },

    async passkeyRegistrationOptions(user: { id: number; email: string; name: string }) {
      const existing = await transaction((tx) => tx.factors.passkeysOf(user.id))
      const options = await registrationOptions(party, user, existing)
      await newChallenge('passkey-register', options.challenge, user.id)
      return options
    },

    async registerPasskey(
      userId: number,
      credential: CredentialJson,
      name: string | undefined,
      by: AuditSource,
    ): Promise<PasskeyView> {
      // Spent in a unit of its own: a response that then fails its checks has used it up.
      const ceremony = await transaction((tx) =>
        spendCeremony(tx.factors, 'passkey-register', credential),
      )
      if (ceremony.userId !== userId) throw ceremonyRefused('unknown', 'passkey challenge')
      const passkey = await verifyRegistration(party, credential, ceremony)
      return await transaction(async (tx) => {
        const count = (await tx.factors.passkeysOf(userId)).length
        let row: PasskeyRow
        try {
          row = await tx.factors.insertPasskey({
            ...passkey,
            userId,
            name: name?.trim() || `Passkey ${count + 1}`,
            createdAt: clock(),
          })
        } catch (error) {
          if (error instanceof UniqueViolation) {
            throw new AppError('CONFLICT', 'This passkey is registered already')
          }
          throw error
        }
        await tx.audit.record(by, {
          action: 'passkey.created',
          target: { type: 'passkey', id: String(row.id) },
          changes: { user_id: { before: null, after: userId } },
        })
        return passkeyView(row)
      })
    },

    async passkeyLoginOptions() {
      const options = await loginOptions(party)
      await newChallenge('passkey-login', options.challenge, null)
      return options
    },

    /**
     * A passkey sign-in: the challenge is spent, the signature checked, the counter moved. A
     * counter that went back flags the passkey (a clone) and refuses it from then on. The
     * user's id, or 401 for a passkey roster does not know.
     */
    async signInWithPasskey(credential: CredentialJson, by: AuditSource): Promise<number> {
      const { ceremony, passkey } = await transaction(async (tx) => ({
        ceremony: await spendCeremony(tx.factors, 'passkey-login', credential),
        passkey: await tx.factors.passkeyByCredentialId(String(credential.id)),
      }))
      if (passkey === null) {
        throw new AppError('INVALID_CREDENTIALS', 'This passkey is not registered with roster')
      }
      if (passkey.flaggedAt !== null) throw clonedPasskey()
      // The account the authenticator says it signs in must be the passkey's (WebAuthn §7.2
      // step 6): a passkey of one account presented as another's is refused.
      if (!handleMatches(credential, passkey.userId)) {
        throw new AppError('INVALID_CREDENTIALS', 'This passkey belongs to another account')
      }
      // The signature first: an unsigned counter must not be able to flag somebody's passkey.
      // The library is given counter 0 so that the counter rule below is the only one.
      await verifyLogin(party, credential, ceremony, {
        ...passkey,
        counter: 0,
        transports: [...passkey.transports],
      })
      const presented = assertionCounter(credential) ?? 0
      const outcome = await transaction(async (tx) => {
        if (counterWentBack(passkey.counter, presented)) {
          await tx.factors.flagPasskey(passkey.id, clock())
          await tx.audit.record(by, {
            action: 'passkey.flagged',
            target: { type: 'passkey', id: String(passkey.id) },
            changes: { counter: { before: passkey.counter, after: presented } },
          })
          return 'flagged' as const
        }
        const moved = await tx.factors.recordPasskeyUse(
          passkey.id,
          passkey.counter,
          presented,
          clock(),
        )
        return moved ? passkey.userId : ('raced' as const)
      })
      if (outcome === 'flagged') throw clonedPasskey()
      if (outcome === 'raced') throw ceremonyRefused('used', 'passkey challenge')
      return outcome
    },

    async removePasskey(userId: number, id: number, by: AuditSource): Promise<void> {
      await transaction(async (tx) => {
        if (!(await tx.factors.deletePasskey(userId, id))) throw notFound('No passkey with this id')
        await tx.audit.record(by, {
          action: 'passkey.deleted',
          target: { type: 'passkey', id: String(id) },
          changes: { user_id: { before: userId, after: null } },
        })
      })
    },

    /** An admin's reset: every passkey, TOTP and recovery code of the user, gone. */
    async reset(userId: number, by: AuditSource): Promise<void> {
      await transaction(async (tx) => {
        const passkeys = await tx.factors.deletePasskeys(userId)
        const totp = await tx.factors.deleteTotp(userId)
        await tx.factors.deleteRecoveryCodes(userId)
        await tx.audit.record(by, {
          action: 'factors.removed',
          target: userTarget(userId),
          changes: {
            passkeys: { before: passkeys, after: 0 },
            totp: { before: totp, after: false },
          },
        })
      })
    },
  }

  async function takeCode(factors: FactorWrites, userId: number, code: string, at: number) {
    const totp = await factors.totpOf(userId)
    if (totp?.confirmedAt == null) return false
    const step = matchingStep(totp.secret, code.trim(), at)
    return step !== null && (await factors.takeTotpStep(userId, step))
  }
}

export type SecondFactors = ReturnType<typeof createSecondFactors>
