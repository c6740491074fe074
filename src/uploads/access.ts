import { challengeFor } from '../auth/authenticator'
import { ANY_SCHEME, type Principal } from '../auth/principal'
import { AppError, notFound } from '../errors/errors'
import type { Owner, UploadRecord } from './service'

/** Who owns what a request uploads: its user or API key, or nobody. */
export function ownerOf(principal: Principal | null): Owner {
  if (principal === null) return { userId: null, keyId: null }
  return principal.kind === 'user'
    ? { userId: principal.userId, keyId: null }
    : { userId: null, keyId: principal.keyId }
}

function isOwnerOrKey(owner: Owner, principal: Principal | null): boolean {
  if (principal === null) return false
  if (principal.kind === 'apiKey') return true
  return owner.userId !== null && owner.userId === principal.userId
}

/** Public: anyone. Private: the owner or an API key; nobody else learns that it exists. */
export function requireReader(
  upload: { isPublic: boolean; owner: Owner },
  principal: Principal | null,
): void {
  if (upload.isPublic || isOwnerOrKey(upload.owner, principal)) return
  if (principal === null) throw credentialsNeeded()
  throw notFound('No such upload or file')
}

/** The owner or an API key; another user is refused (403 public, 404 private). */
export function requireDeleter(upload: UploadRecord, principal: Principal | null): void {
  if (isOwnerOrKey(upload.owner, principal)) return
  if (principal === null) throw credentialsNeeded()
  if (upload.isPublic)
    throw new AppError('FORBIDDEN', 'Only the owner or an API key may delete this upload')
  throw notFound('No upload with this id')
}

function credentialsNeeded(): AppError {
  return new AppError(
    'UNAUTHORIZED',
    'This upload is private; send the owner’s credential or an API key',
    [],
    {
      'www-authenticate': challengeFor(ANY_SCHEME),
    },
  )
}
