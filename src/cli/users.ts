import { ConfigError } from '../config'
import { renderFlags } from './args'
import { CHANGE_FLAGS, resetFactors, SWITCHES, type Switch, switchUser } from './users-change'
import { CREATE_FLAGS, createUser } from './users-create'
import { EXPORT_FLAGS, exportUsers } from './users-export'
import { IMPORT_FLAGS, importUsers } from './users-import'

export const USERS_HELP =
  () => `Usage: roster users <create|promote|demote|activate|deactivate|reset-factors|import|export> [flags]

roster users create --name NAME --email EMAIL [--username NAME] [--password-stdin] [--role member|admin]
  Creates one user directly in the database (the server may be running), for bootstrapping
  the first account: the first admin is
    echo "$PASSWORD" | roster users create --role admin --name Ada --email ada@example.com --password-stdin
  Prints the record as JSON.

${renderFlags(CREATE_FLAGS)}

roster users promote ID|EMAIL
roster users demote ID|EMAIL
  Makes a user an admin, or a member again, directly in the database. The user's sessions and
  tokens end; the last active admin is not demoted. Prints the record as JSON.

roster users deactivate ID|EMAIL
roster users activate ID|EMAIL
  Refuses the user sign-in (ending its sessions and tokens at once), or restores it, as
  PATCH /users/{id} { "active": ... } and SCIM's active do. The last active admin is not
  deactivated. Prints the record as JSON.

roster users reset-factors ID|EMAIL
  Removes every passkey, the authenticator app (TOTP) and the recovery codes of a user who lost
  them, as DELETE /users/{id}/factors does; the user signs in with its password again. Prints
  the user's factors (none) as JSON.

${renderFlags(CHANGE_FLAGS)}

roster users export [--format jsonl|csv] > FILE
  Writes every user, in id order and from one snapshot, to standard output: id, name, email,
  username, active, role, email_verified_at, created_at, updated_at, and in JSON Lines its
  groups (by name) and SCIM profile. CSV cannot carry groups or SCIM profiles: it says on
  standard error how many users had some. In CSV, a value a spreadsheet would run as a formula
  (starting with = + - @) is written with a ' in front; import takes it off again.

${renderFlags(EXPORT_FLAGS)}

roster users import FILE [--format jsonl|csv] [--skip-invalid] [--keep-ids]
  Reads users from FILE (- for standard input): name, email, every other field export writes
  (groups are found by name, made when missing), and optionally password (hashed with argon2id
  on the way in, about 20 a second) or password_hash (argon2 or bcrypt, as export
  --with-password-hashes writes it). id is ignored unless --keep-ids, version always. Every
  row is checked as POST /users checks it, and emails and usernames must be new. By default
  one bad row imports nothing; the errors are listed with their line numbers. Progress goes
  to standard error.

${renderFlags(IMPORT_FLAGS)}`

/** `roster users create|promote|demote|activate|deactivate|reset-factors|import|export`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [action, ...rest] = args
  // Every command's --help is the same page: the commands never print it themselves.
  if (action !== undefined && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(USERS_HELP())
    return 0
  }
  if (action !== undefined && Object.hasOwn(SWITCHES, action)) {
    return await switchUser(action as Switch, rest, env)
  }
  switch (action) {
    case 'create':
      return await createUser(rest, env)
    case 'reset-factors':
      return await resetFactors(rest, env)
    case 'import':
      return await importUsers(rest, env)
    case 'export':
      return await exportUsers(rest, env)
    case '--help':
    case '-h':
      console.log(USERS_HELP())
      return 0
    default:
      throw new ConfigError(
        action === undefined
          ? 'users needs a command: create, promote, demote, activate, deactivate, reset-factors, import or export (see roster users --help)'
          : `unknown users command ${JSON.stringify(action)} (see roster users --help)`,
      )
  }
}
