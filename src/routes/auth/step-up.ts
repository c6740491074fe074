import type { Principal } from '../../auth/principal'
import type { CredentialStore } from '../../auth/sessions'

/** How recent a sign-in must be to change how an account signs in (CONTRACT section 15). */
export const STEP_UP_MS = 5 * 60 * 1000

/**
 * Whether a user's credential comes from a sign-in within the last 5 minutes: its session's or
 * token's creation (a session's renewals do not move it). Basic carries no sign-in time, and a
 * key is no user: both answer false, so they fall back to `current_password` or their scopes.
 */
export function recentSignIn(
  credentials: Pick<CredentialStore, 'signedInAt'>,
  clock: () => number,
): (principal: Principal) => Promise<boolean> {
  return async (principal) => {
    if (principal.kind !== 'user' || principal.secret === undefined) return false
    if (principal.scheme === 'basic') return false
    const kind = principal.scheme === 'session' ? 'session' : 'access_token'
    const at = await credentials.signedInAt(kind, principal.secret)
    return at !== null && clock() - at <= STEP_UP_MS
  }
}
