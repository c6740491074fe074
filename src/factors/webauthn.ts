import { sha256Hex } from '../auth/tokens'
import { AppError, badRequest } from '../errors/errors'

/**
 * The WebAuthn ceremonies (CONTRACT section 15) through @simplewebauthn/server, the library the
 * field uses for the parts with sharp edges: CBOR and COSE keys, attestation formats, signature
 * checks per algorithm, the authenticator data's flags. What stays ours: who the relying party
 * is, where a challenge lives (the database, so any instance finishes a ceremony), and the
 * counter rule.
 */

/**
 * The library, loaded on the first ceremony: with its ASN.1 and X.509 dependencies it costs the
 * binary ~5 MB of memory at start, which a roster nobody registers a passkey on should not pay.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | null = null
const webauthn = () => {
  library ??= import('@simplewebauthn/server')
  return library
}

/** Who roster is to an authenticator, from --public-url and --webauthn-origins. */
export interface RelyingParty {
  id: string
  name: string
  /** Whether a browser origin may take part (the page the ceremony ran on). */
  allows(origin: string): boolean
}

export function relyingParty(publicUrl: string | null, extraOrigins: readonly string[]) {
  const extra = new Set(extraOrigins)
  if (publicUrl === null) {
    // A laptop: the console at http://localhost:PORT. Browsers treat localhost as secure.
    return {
      id: 'localhost',
      name: 'roster',
      allows: (origin: string) => extra.has(origin) || isLocalhostOrigin(origin),
    } satisfies RelyingParty
  }
  const url = new URL(publicUrl)
  return {
    id: url.hostname,
    name: url.hostname,
    allows: (origin: string) => origin === url.origin || extra.has(origin),
  } satisfies RelyingParty
}

function isLocalhostOrigin(origin: string): boolean {
  try {
    const url = new URL(origin)
    return url.hostname === 'localhost' && (url.protocol === 'http:' || url.protocol === 'https:')
  } catch {
    return false
  }
}

/** How long a ceremony may take, and its challenge live. */
export const CEREMONY_TTL_MS = 5 * 60 * 1000

/** The credential as the browser's `toJSON()` gives it (only what is read here is typed). */
export interface CredentialJson {
  id: string
  rawId: string
  type: string
  response: { clientDataJSON: string; [key: string]: unknown }
  [key: string]: unknown
}

/**
 * The challenge and origin a credential's clientDataJSON names, without trusting them yet: the
 * challenge picks the stored ceremony, the origin is checked against the relying party.
 */
export function clientDataOf(credential: CredentialJson): { challenge: string; origin: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(credential.response.clientDataJSON, 'base64url').toString())
  } catch {
    throw badRequest('response.clientDataJSON is not base64url-encoded JSON')
  }
  const { challenge, origin } = (parsed ?? {}) as { challenge?: unknown; origin?: unknown }
  if (typeof challenge !== 'string' || typeof origin !== 'string') {
    throw badRequest('response.clientDataJSON lacks its challenge or origin')
  }
  return { challenge, origin }
}

/** The stored form of a challenge: its SHA-256 (what the database keeps). */
export const challengeHash = (challenge: string) => sha256Hex(`webauthn:${challenge}`)

/**
 * A user's handle for authenticators: opaque bytes, stable per account (so registering twice on
 * one authenticator replaces its passkey there), and not the email.
 */
export function userHandle(userId: number): Uint8Array {
  return Buffer.from(sha256Hex(`roster-user:${userId}`).slice(0, 32), 'hex')
}

export async function registrationOptions(
  party: RelyingParty,
  user: { id: number; email: string; name: string },
  existing: readonly { credentialId: string; transports: readonly string[] }[],
) {
  const { generateRegistrationOptions } = await webauthn()
  return generateRegistrationOptions({
    rpName: party.name,
    rpID: party.id,
    userName: user.email,
    userDisplayName: user.name,
    userID: userHandle(user.id) as Uint8Array<ArrayBuffer>,
    timeout: CEREMONY_TTL_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((passkey) => ({
      id: passkey.credentialId,
      transports: [...passkey.transports] as never,
    })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  })
}

export async function loginOptions(party: RelyingParty) {
  const { generateAuthenticationOptions } = await webauthn()
  // No allowCredentials: the authenticator offers the passkeys it holds (discoverable).
  return generateAuthenticationOptions({
    rpID: party.id,
    timeout: CEREMONY_TTL_MS,
    userVerification: 'required',
  })
}

/** A verified registration: what is stored of the new passkey. */
export interface RegisteredPasskey {
  credentialId: string
  publicKey: string
  counter: number
  transports: string[]
  backedUp: boolean
}

/** What every response must show: this ceremony's challenge, its page, roster, a verified user. */
function expectations(party: RelyingParty, expected: { challenge: string; origin: string }) {
  return {
    expectedChallenge: expected.challenge,
    expectedOrigin: expected.origin,
    expectedRPID: party.id,
    requireUserVerification: true,
  }
}

/**
 * The library throws for a response that is malformed or fails a check (origin, relying
 * party, flags, challenge): the client's fault, 400 with the library's reason.
 */
async function refusedAsBadRequest<T>(what: string, check: () => Promise<T>): Promise<T> {
  try {
    return await check()
  } catch (error) {
    throw badRequest(`${what}: ${(error as Error).message}`)
  }
}

export async function verifyRegistration(
  party: RelyingParty,
  credential: CredentialJson,
  expected: { challenge: string; origin: string },
): Promise<RegisteredPasskey> {
  const { verifyRegistrationResponse } = await webauthn()
  const verified = await refusedAsBadRequest('The passkey could not be verified', () =>
    verifyRegistrationResponse({
      response: credential as never,
      ...expectations(party, expected),
    }),
  )
  if (!verified.verified) throw badRequest('The passkey could not be verified')
  const info = verified.registrationInfo
  return {
    credentialId: info.credential.id,
    publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
    counter: info.credential.counter,
    transports: [...(info.credential.transports ?? [])],
    backedUp: info.credentialBackedUp,
  }
}

/** Whether an assertion's userHandle, when it carries one, is this user's. */
export function handleMatches(credential: CredentialJson, userId: number): boolean {
  const handle = credential.response.userHandle
  if (handle === undefined || handle === null || handle === '') return true
  return handle === Buffer.from(userHandle(userId)).toString('base64url')
}

/** The counter an assertion carries (authenticator data bytes 33–36, big-endian). */
export function assertionCounter(credential: CredentialJson): number | null {
  const data = credential.response.authenticatorData
  if (typeof data !== 'string') return null
  const bytes = Buffer.from(data, 'base64url')
  return bytes.length >= 37 ? bytes.readUInt32BE(33) : null
}

/** Whether a counter shows a clone: either side counts, and it did not grow (WebAuthn §6.1.1). */
export function counterWentBack(stored: number, presented: number): boolean {
  return (stored > 0 || presented > 0) && presented <= stored
}

export async function verifyLogin(
  party: RelyingParty,
  credential: CredentialJson,
  expected: { challenge: string; origin: string },
  passkey: { credentialId: string; publicKey: string; counter: number; transports: string[] },
): Promise<{ counter: number }> {
  const { verifyAuthenticationResponse } = await webauthn()
  const verified = await refusedAsBadRequest('The passkey sign-in could not be verified', () =>
    verifyAuthenticationResponse({
      response: credential as never,
      ...expectations(party, expected),
      credential: {
        id: passkey.credentialId,
        publicKey: Buffer.from(passkey.publicKey, 'base64url') as Uint8Array<ArrayBuffer>,
        counter: passkey.counter,
        transports: passkey.transports as never,
      },
    }),
  )
  // A well-formed assertion whose signature is not the passkey's: a wrong credential.
  if (!verified.verified) {
    throw new AppError('INVALID_CREDENTIALS', 'The passkey’s signature does not verify')
  }
  return { counter: verified.authenticationInfo.newCounter }
}
