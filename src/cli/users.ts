import { TypeCompiler } from '@sinclair/typebox/compiler'
import { hashPassword } from '../auth/passwords'
import { ConfigError, loadConfig } from '../config'
import { makeDeps } from '../deps'
import { AppError } from '../http/errors'
import { createLogger } from '../log'
import { CreateUserBody } from '../users/schema'
import { toView } from '../users/service'
import { configFlags, type FlagSpec, parseFlags, renderFlags, serveFlags } from './args'

const FLAGS: FlagSpec[] = [
  { flag: 'name', env: [], defaultText: '(required)', help: 'the user’s name' },
  {
    flag: 'email',
    env: [],
    defaultText: '(required)',
    help: 'the user’s email (the sign-in identifier)',
  },
  {
    flag: 'password-stdin',
    env: [],
    defaultText: 'false',
    help: 'read the password from standard input (one line), so it stays out of the shell history',
    boolean: true,
  },
  ...serveFlags('data-dir'),
]

export const USERS_HELP =
  () => `Usage: roster users create --name NAME --email EMAIL [--password-stdin]

Creates a user directly in the database (the server may be running), for bootstrapping the
first account. Prints the record as JSON.

${renderFlags(FLAGS)}`

const validate = TypeCompiler.Compile(CreateUserBody)

/** `roster users create`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [action, ...rest] = args
  if (action !== 'create') {
    console.log(USERS_HELP())
    return action === '--help' || action === '-h' ? 0 : 2
  }
  const { flags } = parseFlags('users', rest, FLAGS)
  if (flags.help) {
    console.log(USERS_HELP())
    return 0
  }
  const { name, email, 'password-stdin': fromStdin, ...serverFlags } = configFlags(flags)
  const password = fromStdin === true ? await readPasswordLine() : undefined
  const input = { name, email, ...(password === undefined ? {} : { password }) }
  if (!validate.Check(input)) {
    const problems = [...validate.Errors(input)].map(
      (issue) =>
        `${issue.path.slice(1) || 'input'} ${typeof issue.schema.error === 'string' ? issue.schema.error : issue.message}`,
    )
    throw new ConfigError(`invalid user: ${[...new Set(problems)].join('; ')}`)
  }
  const deps = makeDeps(loadConfig(serverFlags, env), createLogger())
  try {
    const passwordHash = password === undefined ? null : await hashPassword(password)
    const user = deps.users.create({
      name: input.name as string,
      email: input.email as string,
      passwordHash,
    })
    console.log(JSON.stringify(toView(user)))
    return 0
  } catch (error) {
    if (error instanceof AppError) {
      console.error(`roster: ${error.message}`)
      return 1
    }
    throw error
  } finally {
    deps.db.$client.close()
  }
}

async function readPasswordLine(): Promise<string> {
  const text = await Bun.stdin.text()
  const line = text.split(/\r?\n/, 1)[0] ?? ''
  if (line === '') throw new ConfigError('--password-stdin read no password')
  return line
}
