import type { AuditWrites } from '../audit/log'
import type { Config } from '../config'
import { AppError, badRequest } from '../errors/errors'
import type { Role } from './access'
import { API_KEY_PREFIX, type ApiKeyStore } from './api-keys'
import { type BasicCache, type BasicCredentials, parseBasic } from './basic'
import { admit, type Origin } from './door'
import type { LoginLimiter } from './limiter'
import { hashPassword, needsRehash, verifyPassword } from './passwords'
import type { Principal, Scheme } from './principal'
import type { CredentialStore, SignedInUser } from './sessions'

/** What the authenticator needs from the users feature. */
export interface UserLookup {
  /**
   * The account an identifier names: by email, else by username (both without regard to case).
   */
  bySignInName(identifier: string): Promise<{
    id: number
    /** The account's address: the limiter's key, whichever name was typed. */
    email: string
    passwordHash: string | null
    role: Role
    /** Whether the address is verified (--require-verified-email). */
    verified: boolean
    /** False: the account is deactivated and may not sign in. */
    active: boolean
    /** True: a confirmed TOTP; a password alone does not sign the account in. */
    secondFactor: boolean
  } | null>
  /** A user's row with its current password hash (null if there is no such user). */
  withPasswordHash(
    userId: number,
  ): Promise<{ user: SignedInUser; passwordHash: string | null; secondFactor: boolean } | null>
  /**
   * Replaces a password hash with a stronger one of the same password, if it is still
   * `expected` (a compare-and-set): not a password change (no version, no revocation).
   */
  replacePasswordHash(userId: number, expected: string, replacement: string): Promise<void>
}

/** An account whose password was just verified. */
export interface SignedIn {
  id: number
  passwordHash: string
  role: Role
  /** A confirmed TOTP: the password is the first of two steps (POST /auth/mfa/verify). */
  secondFactor: boolean
}

export type { Origin }

export interface Presented {
  authorization: string | null
  apiKeyHeader: string | null
  apiKeyQuery: string | null
  sessionCookie: string | null
}

export interface Authenticated {
  principal: Principal | null
  /** Set when a session was used and extended: the cookie must be sent again. */
  renewedSession?: string
}

const CHALLENGES: Record<Scheme, string> = {
  basic: 'Basic realm="roster", charset="UTF-8"',
  bearer: 'Bearer',
  session: 'Bearer',
  apiKey: 'ApiKey',
}

/** The WWW-Authenticate value for a route that takes these schemes. */
export function challengeFor(schemes: readonly Scheme[], invalidToken = false): string {
  const values = new Set(schemes.map((scheme) => CHALLENGES[scheme]))
  return [...values]
    .map((value) => (invalidToken && value === 'Bearer' ? 'Bearer error="invalid_token"' : value))
    .join(', ')
}

export function unauthorized(schemes: readonly Scheme[], message: string, invalidToken = false) {
  return new AppError('UNAUTHORIZED', message, [], {
    'www-authenticate': challengeFor(schemes, invalidToken),
  })
}

/**
 * Turns the credentials a request presents into a principal, for a route that takes `schemes`.
 * The Authorization header wins over an API key, which wins over the session cookie. A
 * presented credential that is malformed, unknown, expired or revoked is a 401 (an invalid
 * session cookie is only ignored: browsers send it everywhere). With nothing presented the
 * principal is null; routes that require one answer 401 themselves.
 */
export function createAuthenticator(deps: {
  config: Config
  credentials: CredentialStore
  apiKeys: ApiKeyStore
  users: UserLookup
  basicCache: BasicCache
  limiter: LoginLimiter
  /** Failed sign-ins and lockouts are audit events (written alone: they change no record). */
  audit: AuditWrites
  now: () => number
}) {
  const lockouts = new RecentLockouts()
  /** Basic: from the cache (one read: is the password still the one verified?) or argon2. */
  async function basic(
    header: string,
    schemes: readonly Scheme[],
    originOf: () => Origin,
  ): Promise<Principal> {
    const credentials = parseBasic(header)
    if (credentials === null) throw unauthorized(schemes, 'Malformed Basic credentials')
    const cached = await deps.basicCache.lookup(credentials, (id) =>
      deps.users.withPasswordHash(id),
    )
    if (cached !== null) {
      // The cache reads both (an absent one is no refusal: the lookup did not read it).
      admit(
        { active: cached.active !== false, verified: cached.email_verified_at !== null },
        deps.config.requireVerifiedEmail,
      )
      return { kind: 'user', userId: cached.id, role: cached.role, scheme: 'basic', user: cached }
    }
    return verifyBasic(credentials, schemes, originOf)
  }

  async function verifyBasic(
    credentials: BasicCredentials,
    schemes: readonly Scheme[],
    originOf: () => Origin,
  ): Promise<Principal> {
    const user = await signIn(credentials.identifier, credentials.password, originOf())
    if (user === null) throw unauthorized(schemes, 'Invalid email or password')
    // Said only to one who knows the password: Basic has no place for a second factor's code.
    if (user.secondFactor) {
      throw unauthorized(
        schemes,
        'This account has two-factor sign-in, which HTTP Basic cannot carry: sign in at /login and use the bearer token',
      )
    }
    deps.basicCache.remember(credentials, user.id, user.passwordHash)
    return { kind: 'user', userId: user.id, role: user.role, scheme: 'basic' }
  }

  /**
   * The one password check, for /login and Basic: the account is looked up by the name typed
   * (its email or its username), the limiter lets the attempt through or answers 429, argon2
   * runs (against a dummy hash when the name is unknown, so both failures take as long), and the
   * outcome is settled with the limiter. The limiter counts an account's failures under its
   * address whichever of its names was typed; an unknown name under itself. The user, or null
   * when the name or the password is wrong.
   */
  async function signIn(
    identifier: string,
    password: string,
    origin: Origin,
  ): Promise<SignedIn | null> {
    const typed = identifier.trim().toLowerCase()
    const user = await deps.users.bySignInName(typed)
    const address = user === null ? typed : user.email.toLowerCase()
    return await limited<SignedIn>(
      address,
      origin,
      async () => {
        const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash()))
        if (user === null || user.passwordHash === null || !ok) return { failed: user?.id ?? null }
        // Only after the right password: the refusal tells nothing to one who does not know it.
        admit(user, deps.config.requireVerifiedEmail)
        if (needsRehash(user.passwordHash)) strengthen(user.id, user.passwordHash, password)
        return {
          id: user.id,
          passwordHash: user.passwordHash,
          role: user.role,
          secondFactor: user.secondFactor,
        }
      },
      (signedIn) => !signedIn.secondFactor,
    )
  }

  /**
   * An imported hash weaker than roster's own is replaced now that the password is known, after
   * the answer (a sign-in does not wait for a second argon2 run); if it fails, the next does it.
   */
  function strengthen(userId: number, weak: string, password: string): void {
    void hashPassword(password)
      .then((strong) => deps.users.replacePasswordHash(userId, weak, strong))
      .catch(() => {})
  }

  /**
   * One password check under the login limiter: let through or 429, then settled as a failure
   * or a success. Every check of a password a caller types goes through here, and each failure
   * and each lockout (once per lock) is an audit event.
   */
  async function limited<T extends object>(
    address: string,
    origin: Origin,
    check: () => Promise<T | { failed: number | null }>,
    /**
     * Whether this success clears the address's failures. A right password of an account with
     * TOTP does not: only the code finishes the sign-in, and guesses at codes must not be
     * forgiven by typing the password again.
     */
    clears: (outcome: T) => boolean = () => true,
  ): Promise<T | null> {
    const attempt = await deps.limiter.attempt(address, origin.ip)
    if ('retryAfter' in attempt) {
      if (lockouts.first(address, deps.now(), attempt.retryAfter)) {
        await recordLogin('login.locked', address, null, origin)
      }
      throw tooManyAttempts(attempt.retryAfter)
    }
    try {
      const outcome = await check()
      if ('failed' in outcome) {
        await attempt.failed()
        await recordLogin('login.failed', address, outcome.failed, origin)
        return null
      }
      if (clears(outcome)) await attempt.succeeded()
      return outcome
    } finally {
      attempt.abandoned()
    }
  }

  /** A failed or refused sign-in for `address`: the account's id as the actor, when there is one. */
  async function recordLogin(
    action: 'login.failed' | 'login.locked',
    address: string,
    userId: number | null,
    origin: Origin,
  ): Promise<void> {
    const actor = { type: 'user' as const, id: userId === null ? null : String(userId) }
    await deps.audit.record(
      { actor, requestId: origin.requestId, ip: origin.ip },
      { action, target: { type: 'login', id: address } },
    )
  }

  async function bearer(header: string, schemes: readonly Scheme[]): Promise<Principal> {
    const token = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header.trim())?.[1]
    if (token === undefined) throw unauthorized(schemes, 'Malformed Bearer credentials', true)
    const user = await deps.credentials.useAccessToken(token)
    if (user === null) throw unauthorized(schemes, 'Invalid, expired or revoked token', true)
    return { kind: 'user', userId: user.id, role: user.role, scheme: 'bearer', secret: token, user }
  }

  async function apiKey(presented: Presented, schemes: readonly Scheme[]): Promise<Principal> {
    const { apiKeyHeader: header, apiKeyQuery: query } = presented
    if (header !== null && query !== null && header !== query) {
      throw badRequest('An API key was sent both as X-API-Key and as api_key, and they differ')
    }
    const key = await deps.apiKeys.authenticate((header ?? query) as string)
    if (key === null) throw unauthorized(schemes, 'Invalid or revoked API key')
    return {
      kind: 'apiKey',
      keyId: key.id,
      name: key.name,
      scopes: key.scopes,
      expiresAt: key.expiresAt,
      createdByUser: key.createdByUser,
    }
  }

  return {
    signIn,
    /**
     * A second factor's check (an mfa_token's code) under the same limiter as passwords, for
     * the account's address: guessing codes is as limited as guessing passwords, and each wrong
     * one is a failed sign-in in the audit log. Null when the check failed; 429 when over.
     */
    underLimit: <T extends object>(
      address: string,
      origin: Origin,
      check: () => Promise<T | { failed: number | null }>,
    ) => limited<T>(address.toLowerCase(), origin, check),
    /**
     * Whether `password` is the account's current one (`current_password` on a credential
     * change): checked under the login limiter for the account's address, so guessing it with a
     * stolen token is as limited as guessing at /login. RATE_LIMITED when over the limit.
     */
    async confirmPassword(
      account: { email: string; passwordHash: string },
      password: string,
      origin: Origin,
    ): Promise<boolean> {
      const address = account.email.toLowerCase()
      const ok = await limited(address, origin, async () =>
        (await verifyPassword(password, account.passwordHash)) ? { ok: true } : { failed: null },
      )
      return ok !== null
    },
    /**
     * Who presented what: null when nothing this route takes was presented. Throws (rejects)
     * UNAUTHORIZED for a credential that is wrong, expired or revoked.
     */
    async authenticate(
      presented: Presented,
      schemes: readonly Scheme[],
      /** The client's IP and request, asked for only when a password is checked (the limiter). */
      originOf: () => Origin,
    ): Promise<Authenticated> {
      const { authorization } = presented
      if (authorization !== null) {
        const scheme = authorization.trim().split(' ', 1)[0]?.toLowerCase()
        if (scheme === 'basic' && schemes.includes('basic')) {
          return { principal: await basic(authorization, schemes, originOf) }
        }
        // An API key may come as a bearer token (Prometheus sends its credentials so).
        const bearerKey = scheme === 'bearer' ? bearerApiKey(authorization) : null
        if (bearerKey !== null && schemes.includes('apiKey')) {
          return {
            principal: await apiKey({ ...presented, apiKeyHeader: bearerKey }, schemes),
          }
        }
        if (scheme === 'bearer' && schemes.includes('bearer')) {
          return { principal: await bearer(authorization, schemes) }
        }
        throw unauthorized(schemes, 'This route does not take that kind of credential')
      }
      if (
        (presented.apiKeyHeader !== null || presented.apiKeyQuery !== null) &&
        schemes.includes('apiKey')
      ) {
        return { principal: await apiKey(presented, schemes) }
      }
      if (presented.sessionCookie !== null && schemes.includes('session')) {
        const session = await deps.credentials.useSession(presented.sessionCookie)
        if (session !== null) {
          const principal: Principal = {
            kind: 'user',
            userId: session.user.id,
            role: session.user.role,
            scheme: 'session',
            secret: presented.sessionCookie,
            user: session.user,
          }
          // Renewed: the cookie goes out again, now that the new expiry is stored.
          return session.renewed
            ? { principal, renewedSession: presented.sessionCookie }
            : { principal }
        }
      }
      return { principal: null }
    },
  }
}

export type Authenticator = ReturnType<typeof createAuthenticator>

/** The API key in `Authorization: Bearer rk_…`, or null when the token is not one. */
function bearerApiKey(authorization: string): string | null {
  const token = /^Bearer +(\S+)$/i.exec(authorization.trim())?.[1]
  return token?.startsWith(API_KEY_PREFIX) ? token : null
}

export function tooManyAttempts(retryAfterS: number): AppError {
  return new AppError('RATE_LIMITED', 'Too many failed sign-ins; try again later', [], {
    'retry-after': String(retryAfterS),
  })
}

let dummy: Promise<string> | null = null

/**
 * A hash of a random password, verified when the email is unknown or has no password, so that
 * a wrong email costs the same time as a wrong password. Made on first use.
 */
export function dummyHash(): Promise<string> {
  dummy ??= Bun.password.hash(crypto.randomUUID(), { algorithm: 'argon2id' })
  return dummy
}

/** How many addresses' lockouts are remembered; beyond that the oldest are forgotten. */
const MAX_LOCKOUTS = 10_000

/**
 * The addresses locked out lately (per process), so that a lockout is one audit event, not one
 * per refused attempt: a flood of guesses against a locked account writes nothing more.
 */
class RecentLockouts {
  private readonly until = new Map<string, number>()

  /** True the first time `address` is refused in a lock lasting `retryAfterS` from `now`. */
  first(address: string, now: number, retryAfterS: number): boolean {
    const ends = this.until.get(address)
    if (ends !== undefined && ends > now) return false
    this.until.delete(address)
    if (this.until.size >= MAX_LOCKOUTS) {
      const oldest = this.until.keys().next().value
      if (oldest !== undefined) this.until.delete(oldest)
    }
    this.until.set(address, now + retryAfterS * 1000)
    return true
  }
}
