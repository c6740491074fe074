import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * TOTP as RFC 6238 fixes it for authenticator apps: HMAC-SHA-1, 6 digits, 30-second steps from
 * the Unix epoch, and one step either side accepted for clocks that drift. Written here rather
 * than taken from a library: it is twenty lines of RFC 4226, pinned by the RFC's own test
 * vectors (test/factors/totp.test.ts) and checked against an independent client library; the
 * parts with sharp edges (a code taken once, tries limited) are the store's either way.
 */

export const TOTP_DIGITS = 6
export const TOTP_PERIOD_S = 30
/** Steps either side of now that are still accepted (RFC 6238 section 5.2). */
export const TOTP_WINDOW = 1
/** 160 bits, the length of SHA-1's output, as RFC 4226 recommends for a shared secret. */
const SECRET_BYTES = 20

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** Base32 without padding (RFC 4648), the form authenticator apps read secrets in. */
export function base32Encode(bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31]
  return out
}

export function base32Decode(text: string): Uint8Array {
  const clean = text.replace(/=+$/, '').toUpperCase()
  const out: number[] = []
  let buffer = 0
  let bits = 0
  for (const char of clean) {
    const value = BASE32.indexOf(char)
    if (value < 0) throw new Error('not base32')
    buffer = (buffer << 5) | value
    bits += 5
    if (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 255)
      bits -= 8
    }
  }
  return Uint8Array.from(out)
}

/** A new random secret, base32. */
export function newTotpSecret(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)))
}

/** RFC 4226's HOTP of a counter, as `digits` decimal digits (dynamic truncation). */
export function hotp(
  key: Uint8Array,
  counter: number,
  digits = TOTP_DIGITS,
  algorithm = 'sha1',
): string {
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac(algorithm, key).update(message).digest()
  const offset = (mac[mac.length - 1] as number) & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 10 ** digits).padStart(digits, '0')
}

/** The 30-second step a moment (epoch ms) falls in. */
export function stepAt(epochMs: number): number {
  return Math.floor(epochMs / 1000 / TOTP_PERIOD_S)
}

/**
 * The step whose code `code` is, within the window around `epochMs`, or null. Every candidate
 * is compared (in constant time) so the answer's timing says nothing about which one matched.
 */
export function matchingStep(secret: string, code: string, epochMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null
  const key = base32Decode(secret)
  const now = stepAt(epochMs)
  let found: number | null = null
  for (let step = Math.max(0, now - TOTP_WINDOW); step <= now + TOTP_WINDOW; step++) {
    const expected = Buffer.from(hotp(key, step))
    if (timingSafeEqual(expected, Buffer.from(code)) && found === null) found = step
  }
  return found
}

/** The `otpauth://` URI authenticator apps scan (Google's Key Uri Format). */
export function otpauthUrl(secret: string, account: string, issuer: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`
  const query = new URLSearchParams({
    secret,
    issuer,
    algorithm: 'SHA1',
    digits: String(TOTP_DIGITS),
    period: String(TOTP_PERIOD_S),
  })
  return `otpauth://totp/${label}?${query}`
}
