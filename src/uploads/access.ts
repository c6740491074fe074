import type { Scope } from '../auth/access'
import { challengeFor } from '../auth/authenticator'
import { ANY_SCHEME, holds, type Principal } from '../auth/principal'
import { AppError, notFound } from '../errors/errors'
import type { Owner, UploadRecord } from './service'

/** Who owns what a request uploads: its user or API key, or nobody. */
export function ownerOf(principal: Principal | null): Owner {
  if (principal === null) return { userId: null, keyId: null }
  return principal.kind === 'user'
    ? { userId: principal.userId, keyId: null }
    : { userId: null, keyId: principal.keyId }
}

/** The upload's owner (its user, or the key that sent it), or a holder of the scope. */
function isOwnerOrHolder(owner: Owner, principal: Principal | null, scope: Scope): boolean {
  if (principal === null) return false
  if (holds(principal, scope)) return true
  if (principal.kind === 'apiKey') return owner.keyId !== null && owner.keyId === principal.keyId
  return owner.userId !== null && owner.userId === principal.userId
}

/**
 * Public: anyone. Private: the owner, an admin or a key with uploads:read; nobody else learns
 * that it exists.
 */
export function requireReader(
  upload: { isPublic: boolean; owner: Owner },
  principal: Principal | null,
): void {
  if (upload.isPublic || isOwnerOrHolder(upload.owner, principal, 'uploads:read')) return
  if (principal === null) throw credentialsNeeded()
  throw notFound('No such upload or file')
}

/**
 * The owner, an admin or a key with uploads:write; anyone else is refused (403 public, 404
 * private).
 */
export function requireDeleter(upload: UploadRecord, principal: Principal | null): void {
  if (isOwnerOrHolder(upload.owner, principal, 'uploads:write')) return
  if (principal === null) throw credentialsNeeded()
  if (upload.isPublic) {
    throw new AppError(
      'FORBIDDEN',
      'Only the owner, an admin or an API key with uploads:write may delete this upload',
    )
  }
  throw notFound('No upload with this id')
}

function credentialsNeeded(): AppError {
  return new AppError(
    'UNAUTHORIZED',
    'This upload is private; send the owner’s credential, an admin’s, or an API key with uploads:read',
    [],
    {
      'www-authenticate': challengeFor(ANY_SCHEME),
    },
  )
}
