import { describe, expect, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import {
  base32Decode,
  base32Encode,
  hotp,
  matchingStep,
  newTotpSecret,
  otpauthUrl,
  stepAt,
} from '../../src/factors/totp'

// RFC 6238 appendix B: the seeds, times and 8-digit codes the RFC lists, for each hash.
const SEEDS = {
  sha1: '12345678901234567890',
  sha256: '12345678901234567890123456789012',
  sha512: '1234567890123456789012345678901234567890123456789012345678901234',
}
const VECTORS: [number, Record<keyof typeof SEEDS, string>][] = [
  [59, { sha1: '94287082', sha256: '46119246', sha512: '90693936' }],
  [1111111109, { sha1: '07081804', sha256: '68084774', sha512: '25091201' }],
  [1111111111, { sha1: '14050471', sha256: '67062674', sha512: '99943326' }],
  [1234567890, { sha1: '89005924', sha256: '91819424', sha512: '93441116' }],
  [2000000000, { sha1: '69279037', sha256: '90698825', sha512: '38618901' }],
  [20000000000, { sha1: '65353130', sha256: '77737706', sha512: '47863826' }],
]

describe('TOTP (RFC 6238)', () => {
  test.each(VECTORS)('at %d s the codes are the RFC’s', (seconds, codes) => {
    for (const algorithm of ['sha1', 'sha256', 'sha512'] as const) {
      const key = new TextEncoder().encode(SEEDS[algorithm])
      expect(hotp(key, stepAt(seconds * 1000), 8, algorithm)).toBe(codes[algorithm])
    }
  })

  test('an independent client library (otpauth) makes the codes roster accepts', () => {
    const secret = newTotpSecret()
    const client = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) })
    for (const at of [0, 1_700_000_000_000, Date.now()]) {
      const code = client.generate({ timestamp: at })
      expect(matchingStep(secret, code, at)).toBe(stepAt(at))
    }
  })

  test('one step either side is accepted, two are not', () => {
    const secret = newTotpSecret()
    const client = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) })
    const now = 1_800_000_000_000
    expect(matchingStep(secret, client.generate({ timestamp: now - 30_000 }), now)).toBe(
      stepAt(now) - 1,
    )
    expect(matchingStep(secret, client.generate({ timestamp: now + 30_000 }), now)).toBe(
      stepAt(now) + 1,
    )
    expect(matchingStep(secret, client.generate({ timestamp: now - 60_000 }), now)).toBeNull()
    expect(matchingStep(secret, client.generate({ timestamp: now + 60_000 }), now)).toBeNull()
  })

  test('what is not six digits never matches', () => {
    const secret = newTotpSecret()
    for (const code of ['', '12345', '1234567', 'abcdef', ' 123456', '12 456']) {
      expect(matchingStep(secret, code, Date.now())).toBeNull()
    }
  })

  test('the secret is 160 random bits in base32, and the URI is what authenticator apps read', () => {
    const secret = newTotpSecret()
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(base32Decode(secret)).toHaveLength(20)
    expect(base32Encode(base32Decode(secret))).toBe(secret)
    const parsed = OTPAuth.URI.parse(otpauthUrl(secret, 'ada@example.com', 'roster'))
    expect(parsed).toBeInstanceOf(OTPAuth.TOTP)
    expect(parsed.issuer).toBe('roster')
    expect(parsed.label).toBe('ada@example.com')
    expect(parsed.secret.base32).toBe(secret)
    expect((parsed as OTPAuth.TOTP).period).toBe(30)
    expect(parsed.digits).toBe(6)
    expect(parsed.algorithm).toBe('SHA1')
  })
})
