import type { Role } from '../auth/access'
import { ConfigError } from '../config'
import { parseRowId } from '../db/row-id'
import { configFlags, databaseFlags, type FlagSpec, parseFlags } from './args'
import { commandSource } from './open-data'
import { printWrittenUser, withDeps } from './users-common'

export const ROLE_FLAGS: FlagSpec[] = databaseFlags()

/**
 * `roster users promote ID|EMAIL` and `roster users demote ID|EMAIL`: the first admin, and the
 * way back when no admin can sign in. The same rules as the API: the user's sessions and tokens
 * end, and the last admin is not demoted.
 */
export async function changeRole(
  role: Role,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const command = role === 'admin' ? 'promote' : 'demote'
  const { flags, positionals } = parseFlags('users', args, ROLE_FLAGS, 1)
  const target = positionals[0]
  if (target === undefined || target.trim() === '') {
    throw new ConfigError(`users ${command} needs a user id or email`)
  }
  return await withDeps(configFlags(flags), env, async (deps) => {
    const id = parseRowId(target) ?? (await deps.users.idByEmail(target.trim()))
    if (id === null) {
      console.error(`roster: no user with id or email ${JSON.stringify(target)}`)
      return 1
    }
    return await printWrittenUser(() =>
      deps.users.update(id, { role }, { versions: null }, commandSource()),
    )
  })
}
