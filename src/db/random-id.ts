/**
 * `bytes` random bytes from the system's CSPRNG as text. Web Crypto's getRandomValues, not
 * node:crypto: that module costs every start of the binary a few milliseconds (bench/README).
 */
export function randomText(bytes: number, encoding: 'base64' | 'base64url'): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString(encoding)
}

/** `upl_…` / `fil_…`: 16 random bytes, base64url (uploads and the files a store keeps). */
export function newId(prefix: 'upl_' | 'fil_'): string {
  return prefix + randomText(16, 'base64url')
}

/** What newId makes; anything else in a path is answered like a missing upload or file. */
export const ID_FORMAT = /^(upl|fil)_[A-Za-z0-9_-]{22}$/
