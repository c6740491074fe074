import { ConfigError } from '../config'
import { parseRowId } from '../db/row-id'
import type { Deps } from '../deps'
import type { UserChanges } from '../users/records'
import { configFlags, databaseFlags, type FlagSpec, parseFlags } from './args'
import { commandSource } from './open-data'
import { printWrittenUser, withDeps } from './users-common'

export const CHANGE_FLAGS: FlagSpec[] = databaseFlags()

/** The commands that switch one thing about a user, and what each writes. */
export const SWITCHES = {
  promote: { role: 'admin' },
  demote: { role: 'member' },
  activate: { active: true },
  deactivate: { active: false },
} as const satisfies Record<string, UserChanges>

export type Switch = keyof typeof SWITCHES

/**
 * `roster users promote|demote|activate|deactivate ID|EMAIL`: the first admin, and the way back
 * when no admin can sign in. The same rules as the API: the user's sessions and tokens end (on
 * a new role or a deactivation), and the last active admin is neither demoted nor deactivated.
 */
export async function switchUser(
  command: Switch,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  return await onUser(command, args, env, (deps, id) =>
    printWrittenUser(() =>
      deps.users.update(id, SWITCHES[command], { versions: null }, commandSource()),
    ),
  )
}

/**
 * Runs a command on the user its one argument names (an id or an email): 1, said on stderr,
 * when there is no such user.
 */
async function onUser(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  work: (deps: Deps, id: number) => Promise<number>,
): Promise<number> {
  const { flags, positionals } = parseFlags('users', args, CHANGE_FLAGS, 1)
  const target = positionals[0]
  if (target === undefined || target.trim() === '') {
    throw new ConfigError(`users ${command} needs a user id or email`)
  }
  return await withDeps(configFlags(flags), env, async (deps) => {
    const id = parseRowId(target) ?? (await deps.users.idByEmail(target.trim()))
    if (id === null || (await deps.users.get(id)) === null) {
      console.error(`roster: no user with id or email ${JSON.stringify(target)}`)
      return 1
    }
    return await work(deps, id)
  })
}

/**
 * `roster users reset-factors ID|EMAIL`: the way back for a user (the only admin, say) who lost
 * its passkeys, authenticator app and recovery codes. As DELETE /users/{id}/factors: every
 * passkey, TOTP and recovery code goes, audited as factors.removed by the command line.
 */
export async function resetFactors(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  return await onUser('reset-factors', args, env, async (deps, id) => {
    await deps.factors.reset(id, commandSource())
    console.log(JSON.stringify({ id, factors: await deps.factors.status(id) }))
    return 0
  })
}
