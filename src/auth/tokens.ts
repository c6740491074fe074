import { randomText } from '../db/random-id'

/** 32 random bytes as base64url after a recognisable prefix (so leaked secrets can be spotted). */
export function newSecret(prefix: string): string {
  return prefix + randomText(32, 'base64url')
}

/** A secret is always `prefix` + 43 base64url characters; anything else is not ours. */
export function looksLikeSecret(value: string, prefix: string): boolean {
  return (
    value.length === prefix.length + 43 &&
    value.startsWith(prefix) &&
    /^[A-Za-z0-9_-]+$/.test(value.slice(prefix.length))
  )
}

/**
 * The stored form of a secret. SHA-256 is enough (no slow hash needed): the secret is 256 random
 * bits, so there is nothing to brute-force, and lookups by hash stay one index probe.
 */
export function sha256Hex(value: string): string {
  return Bun.SHA256.hash(value, 'hex')
}
