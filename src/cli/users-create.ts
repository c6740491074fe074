import { isRole } from '../auth/access'
import { hashPassword } from '../auth/passwords'
import { ConfigError } from '../config'
import { newUserProblems } from '../users/fields'
import { configFlags, databaseFlags, type FlagSpec, parseFlags } from './args'
import { commandSource } from './open-data'
import { printWrittenUser, withDeps } from './users-common'

export const CREATE_FLAGS: FlagSpec[] = [
  { flag: 'name', env: [], defaultText: '(required)', help: 'the user’s name' },
  {
    flag: 'email',
    env: [],
    defaultText: '(required)',
    help: 'the user’s email (the sign-in identifier)',
  },
  {
    flag: 'username',
    env: [],
    defaultText: 'the email',
    help: 'another name the user may sign in with (SCIM’s userName), unique without regard to case',
  },
  {
    flag: 'password-stdin',
    env: [],
    defaultText: 'false',
    help: 'read the password from standard input (one line), so it stays out of the shell history',
    boolean: true,
  },
  {
    flag: 'role',
    env: [],
    defaultText: 'member',
    help: 'member or admin (an admin signs in to the console and may do what an all-scopes key may)',
  },
  ...databaseFlags(),
]

/** `roster users create`: one user, straight into the database. */
export async function createUser(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('users', args, CREATE_FLAGS)
  const {
    name,
    email,
    username,
    role = 'member',
    'password-stdin': fromStdin,
    ...serverFlags
  } = configFlags(flags)
  if (!isRole(role)) {
    throw new ConfigError(
      `invalid value for --role: ${JSON.stringify(role)} (expected member or admin)`,
    )
  }
  const password = fromStdin === true ? await readPasswordLine() : undefined
  const input = {
    name,
    email,
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
  }
  const problems = newUserProblems(input)
  if (problems.length > 0) {
    const text = problems.map(({ field, message }) => `${field} ${message}`).join('; ')
    throw new ConfigError(`invalid user: ${text}`)
  }
  return await withDeps(serverFlags, env, async (deps) => {
    const passwordHash = password === undefined ? null : await hashPassword(password)
    return await printWrittenUser(() =>
      deps.users.create(
        {
          name: input.name as string,
          email: input.email as string,
          username: input.username as string | undefined,
          passwordHash,
          role,
        },
        commandSource(),
      ),
    )
  })
}

async function readPasswordLine(): Promise<string> {
  const text = await Bun.stdin.text()
  const line = text.split(/\r?\n/, 1)[0] ?? ''
  if (line === '') throw new ConfigError('--password-stdin read no password')
  return line
}
