import { ANY_SCHEME } from '../../auth/principal'
import { AppError } from '../../errors/errors'
import { ANY_CREDENTIAL_SECURITY, principalOf } from '../auth/principal'

/**
 * The --users-access rule. `open`: no credential is asked for. `protected`: reads need any
 * valid credential; creating a user needs an API key; changing or deleting one needs an API
 * key or that user's own credential (403 otherwise).
 */
export function usersAccess(mode: 'open' | 'protected') {
  const isProtected = mode === 'protected'
  const guard = isProtected ? { auth: { schemes: ANY_SCHEME } } : {}
  const docs = isProtected ? { security: ANY_CREDENTIAL_SECURITY } : {}
  return {
    read: guard,
    write: guard,
    /**
     * PUT and PATCH: in open mode too, a credential sent along is read (optionally), since
     * who asks decides whether a password or email may change (see credential-changes.ts).
     */
    update: isProtected ? guard : { auth: { schemes: ANY_SCHEME, optional: true } },
    readDocs: docs,
    writeDocs: docs,
    mayWrite(set: object, targetId?: number): void {
      if (!isProtected) return
      const principal = principalOf(set)
      if (principal?.kind === 'apiKey') return
      if (principal?.kind === 'user' && principal.userId === targetId) return
      throw new AppError(
        'FORBIDDEN',
        targetId === undefined
          ? 'Creating users needs an API key'
          : 'Only the user itself or an API key may change this record',
      )
    },
  }
}
