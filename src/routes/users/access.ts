import type { Role } from '../../auth/access'
import { adminTargetRefusal, coversMembersOnly, roleChangeRefusal } from '../../auth/authority'
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
    provisioning: guard('GET /users/:id/provisioning'),
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
     * Who may give or take a role (sections 12 and 17): an admin or a key with `*`; who may
     * deactivate and restore an account (section 13): an admin or a key with users:write, in
     * either mode (an admin's account only with `*`: adminRefusal). A write that would change
     * either otherwise carries this refusal in its guard.
     */
    roleRefusal(set: object, field: 'role' | 'active' = 'role'): AppError | undefined {
      const principal = principalOf(set)
      if (field === 'role') return roleChangeRefusal(principal)
      if (holds(principal, 'users:write')) return undefined
      return new AppError(
        'FORBIDDEN',
        'Only an admin or an API key with users:write changes whether an account is active',
        [
          fieldDetail(
            'active',
            'users:write is required to change whether an account is active',
            '',
          ),
        ],
      )
    },

    /**
     * The refusal a write to `targetId` carries in case the account is an admin (section 17),
     * made only if it is thrown: most writes are to members, and an error's stack costs.
     */
    adminRefusal(set: object, targetId: number): (() => AppError) | undefined {
      const principal = principalOf(set)
      if (!coversMembersOnly(principal, targetId)) return undefined
      return () => adminTargetRefusal(principal, targetId) as AppError
    },

    /** POST: a role other than member, or an inactive account, needs the same authority. */
    requireRoleAuthority(set: object, role: Role | undefined, active?: boolean): void {
      const refusal =
        role !== undefined && role !== 'member'
          ? this.roleRefusal(set)
          : active === false
            ? this.roleRefusal(set, 'active')
            : undefined
      if (refusal !== undefined) throw refusal
    },
  }
}
