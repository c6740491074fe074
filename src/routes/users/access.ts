import type { Role } from '../../auth/access'
import { holds } from '../../auth/principal'
import { fieldDetail } from '../../errors/details'
import { AppError } from '../../errors/errors'
import { principalOf } from '../auth/principal'
import { guardOf, requireSelfOr, type UsersAccess } from '../authorisation'

/**
 * The users routes' guards, from the authorisation table, for the --users-access mode. `open`:
 * no credential is asked for (a write reads one if sent: a role, a password or an email
 * changes only with authority). `protected`: an API key with the scope, an admin, or (for one
 * record) the member itself.
 */
export function usersAccess(mode: UsersAccess) {
  const guard = (operation: Parameters<typeof guardOf>[0]) => guardOf(operation, mode)
  return {
    list: guard('GET /users'),
    create: guard('POST /users'),
    get: guard('GET /users/:id'),
    replace: guard('PUT /users/:id'),
    patch: guard('PATCH /users/:id'),
    remove: guard('DELETE /users/:id'),

    /** A member reaches only its own record (protected mode); a key or an admin any. */
    requireSelf(set: object, scope: 'users:read' | 'users:write', targetId: number): void {
      if (mode === 'open') return
      requireSelfOr(principalOf(set), scope, targetId)
    },

    /**
     * Who may give a role (section 12): an admin or a key with users:write, in either mode. A
     * write that would change the role of a user otherwise carries this refusal in its guard.
     */
    roleRefusal(set: object): AppError | undefined {
      if (holds(principalOf(set), 'users:write')) return undefined
      return new AppError(
        'FORBIDDEN',
        'Only an admin or an API key with users:write changes a role',
        [fieldDetail('role', 'users:write is required to change a role', '')],
      )
    },

    /** POST: a role other than member needs the same authority. */
    requireRoleAuthority(set: object, role: Role | undefined): void {
      if (role === undefined || role === 'member') return
      const refusal = this.roleRefusal(set)
      if (refusal !== undefined) throw refusal
    },
  }
}
