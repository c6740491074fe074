import { randomBytes } from 'node:crypto'

/** `upl_…` / `fil_…`: 16 random bytes, base64url (uploads and the files a store keeps). */
export function newId(prefix: 'upl_' | 'fil_'): string {
  return prefix + randomBytes(16).toString('base64url')
}

/** What newId makes; anything else in a path is answered like a missing upload or file. */
export const ID_FORMAT = /^(upl|fil)_[A-Za-z0-9_-]{22}$/
