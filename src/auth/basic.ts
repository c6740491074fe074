import { randomText } from '../db/random-id'
import type { SignedInUser } from './sessions'

export interface BasicCredentials {
  /** The email or the username. */
  identifier: string
  password: string
}

const BASIC = /^Basic +([A-Za-z0-9+/]+={0,2})$/i
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * `Authorization: Basic base64(email:password)` (or username:password), decoded as UTF-8 (we
 * announce charset="UTF-8"). Split at the first colon: the password may contain colons, the
 * name not. Null for anything malformed: another scheme, bad base64, bad UTF-8, no colon, an
 * empty name.
 */
export function parseBasic(header: string): BasicCredentials | null {
  const encoded = BASIC.exec(header.trim())?.[1]
  if (encoded === undefined || encoded.length % 4 !== 0) return null
  let decoded: string
  try {
    decoded = utf8.decode(Buffer.from(encoded, 'base64'))
  } catch {
    return null
  }
  const colon = decoded.indexOf(':')
  if (colon <= 0) return null
  return { identifier: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

const CACHE_TTL_MS = 60_000
const CACHE_MAX_ENTRIES = 10_000

interface CachedVerification {
  userId: number
  /** The password hash that was verified: a changed password no longer matches it. */
  passwordHash: string
  expiresAt: number
}

/**
 * Remembers recently verified Basic credentials for a minute, so argon2 (tens of ms and 64 MiB)
 * does not run on every request. Entries are keyed by a hash of email and password under a
 * key that lives only in this process, and hold the password hash that was checked: a password
 * change (a new hash), an email change or a deletion drops the entry on its next use.
 */
export class BasicCache {
  private readonly key = randomText(32, 'base64')
  private readonly entries = new Map<string, CachedVerification>()

  constructor(private readonly now: () => number) {}

  /**
   * The user this credential was verified for, if that user's password hash is still the one
   * checked. `load` reads the user with its current hash (one query).
   */
  async lookup(
    credentials: BasicCredentials,
    load: (
      userId: number,
    ) => Promise<{ user: SignedInUser; passwordHash: string | null; secondFactor: boolean } | null>,
  ): Promise<SignedInUser | null> {
    const id = this.idOf(credentials)
    const entry = this.entries.get(id)
    if (entry === undefined) return null
    const current = entry.expiresAt > this.now() ? await load(entry.userId) : null
    // The account as it is now must still be the one verified: the same password hash and the
    // same name (an email or username change makes the old name a stranger at once, on every
    // instance: each use reads the row).
    // A second factor confirmed since (on any instance) ends Basic for the account at once.
    if (
      current === null ||
      current.secondFactor ||
      current.passwordHash !== entry.passwordHash ||
      !isNamed(current.user, credentials.identifier)
    ) {
      this.entries.delete(id)
      return null
    }
    return current.user
  }

  remember(credentials: BasicCredentials, userId: number, passwordHash: string): void {
    if (this.entries.size >= CACHE_MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(this.idOf(credentials), {
      userId,
      passwordHash,
      expiresAt: this.now() + CACHE_TTL_MS,
    })
  }

  // A SHA-256 keyed with a secret that lives only in this process: the map never holds
  // anything that could be turned back into a password offline.
  private idOf({ identifier, password }: BasicCredentials): string {
    return Bun.SHA256.hash(`${this.key}\0${identifier.toLowerCase()}\0${password}`, 'base64')
  }
}

/** Whether `identifier` is the user's email or username (without regard to case). */
function isNamed(user: SignedInUser, identifier: string): boolean {
  const name = identifier.toLowerCase()
  return user.email.toLowerCase() === name || user.username?.toLowerCase() === name
}
