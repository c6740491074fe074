import { existsSync, statSync } from 'node:fs'
import { extname } from 'node:path'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { hashPassword } from '../auth/passwords'
import { ConfigError, loadConfig } from '../config'
import { type Deps, makeDeps } from '../deps'
import { AppError } from '../errors/errors'
import { createLogger } from '../log'
import { CreateUserBody } from '../users/schema'
import { toView } from '../users/records'
import {
  exportLines,
  type ImportRow,
  type RowError,
  RowValidator,
  readRecords,
  type TransferFormat,
} from '../users/transfer'
import { configFlags, type FlagSpec, parseFlags, renderFlags, serveFlags } from './args'
import { Progress } from './progress'

const CREATE_FLAGS: FlagSpec[] = [
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

const FORMAT_FLAG: FlagSpec = {
  flag: 'format',
  env: [],
  defaultText: 'jsonl',
  help: 'jsonl (one JSON object per line) or csv (with a header row)',
}

const EXPORT_FLAGS: FlagSpec[] = [
  FORMAT_FLAG,
  {
    flag: 'with-password-hashes',
    env: [],
    defaultText: 'false',
    help: 'add a password_hash column, so users keep their passwords when imported into another roster (treat the file like the database)',
    boolean: true,
  },
  ...serveFlags('data-dir'),
]

const IMPORT_FLAGS: FlagSpec[] = [
  { ...FORMAT_FLAG, defaultText: 'by the file name (.csv), else jsonl' },
  {
    flag: 'skip-invalid',
    env: [],
    defaultText: 'false',
    help: 'import the valid rows and report the others, instead of importing nothing when a row is invalid',
    boolean: true,
  },
  ...serveFlags('data-dir'),
]

/** Rows whose emails are looked up together. */
const CHECK_BATCH = 500
/** Errors listed before "… and N more". */
const ERRORS_SHOWN = 20

export const USERS_HELP = () => `Usage: roster users <create|import|export> [flags]

roster users create --name NAME --email EMAIL [--password-stdin]
  Creates one user directly in the database (the server may be running), for bootstrapping
  the first account. Prints the record as JSON.

${renderFlags(CREATE_FLAGS)}

roster users export [--format jsonl|csv] > FILE
  Writes every user, in id order and from one snapshot, to standard output: id, name, email,
  created_at, updated_at. In CSV, a value a spreadsheet would run as a formula (starting with
  = + - @) is written with a ' in front; import takes it off again.

${renderFlags(EXPORT_FLAGS)}

roster users import FILE [--format jsonl|csv] [--skip-invalid]
  Reads users from FILE (- for standard input): name, email and optionally password (hashed
  with argon2id on the way in, about 20 a second) or password_hash (argon2 or bcrypt, as
  export --with-password-hashes writes it). id, created_at, updated_at and version are
  accepted and ignored: imported users get new ids. Every row is checked as POST /users
  checks it, and emails must be new. By default one bad row imports nothing; the errors are
  listed with their line numbers. Progress goes to standard error.

${renderFlags(IMPORT_FLAGS)}`

/** `roster users create|import|export`. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [action, ...rest] = args
  switch (action) {
    case 'create':
      return await create(rest, env)
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
          ? 'users needs a command: create, import or export (see roster users --help)'
          : `unknown users command ${JSON.stringify(action)} (see roster users --help)`,
      )
  }
}

const validate = TypeCompiler.Compile(CreateUserBody)

async function create(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const { flags } = parseFlags('users', args, CREATE_FLAGS)
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
  return await withDeps(serverFlags, env, async (deps) => {
    const passwordHash = password === undefined ? null : await hashPassword(password)
    try {
      const user = await deps.users.create({
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
    }
  })
}

async function exportUsers(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('users', args, EXPORT_FLAGS)
  if (flags.help) {
    console.log(USERS_HELP())
    return 0
  }
  const { format, 'with-password-hashes': withHashes, ...serverFlags } = configFlags(flags)
  const chosen = parseFormat(format, 'jsonl')
  return await withDeps(serverFlags, env, async (deps) => {
    const writer = Bun.stdout.writer({ highWaterMark: 1 << 20 })
    let count = 0
    try {
      for (const line of exportLines(deps.users.exportAll(), chosen, withHashes === true)) {
        writer.write(line)
        count += 1
      }
      await writer.flush()
    } catch (error) {
      // The reader went away (`| head`): stop quietly, as Unix tools do.
      if ((error as { code?: string }).code === 'EPIPE') return 0
      throw error
    }
    const users = chosen === 'csv' ? count - 1 : count
    console.error(`exported ${users.toLocaleString('en-US')} users (${chosen})`)
    return 0
  })
}

async function importUsers(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags, positionals } = parseFlags('users', args, IMPORT_FLAGS, 1)
  if (flags.help) {
    console.log(USERS_HELP())
    return 0
  }
  const [path] = positionals
  if (path === undefined) throw new ConfigError('import needs a FILE (see roster users --help)')
  const { format, 'skip-invalid': skipInvalid, ...serverFlags } = configFlags(flags)
  const chosen = parseFormat(format, extname(path).toLowerCase() === '.csv' ? 'csv' : 'jsonl')
  const fromStdin = path === '-'
  if (!fromStdin && (!existsSync(path) || !statSync(path).isFile())) {
    throw new ConfigError(`cannot read ${path}: no such file`)
  }
  const started = performance.now()
  return await withDeps(serverFlags, env, async (deps) => {
    const validator = new RowValidator(deps.users)
    const rows: ImportRow[] = []
    const errors: RowError[] = []
    let invalid = 0
    const source = fromStdin ? Bun.stdin.stream() : Bun.file(path).stream()
    const progress = new Progress('checking', fromStdin ? null : Bun.file(path).size)
    const keep = (result: ImportRow | RowError) => {
      if ('message' in result) {
        invalid += 1
        if (errors.length < ERRORS_SHOWN) errors.push(result)
      } else {
        rows.push(result)
      }
    }
    let batch: { line: number; value: Record<string, unknown> }[] = []
    const checkBatch = () => {
      for (const result of validator.checkBatch(batch)) keep(result)
      progress.advance(bytes, batch.length)
      bytes = 0
      batch = []
    }
    let bytes = 0
    for await (const record of readRecords(source, chosen, (n) => {
      bytes += n
    })) {
      if ('error' in record) keep({ line: record.line, message: record.error })
      else batch.push(record)
      if (batch.length >= CHECK_BATCH) checkBatch()
    }
    checkBatch()
    progress.finish()
    errors.sort((a, b) => a.line - b.line)
    if (invalid > 0) {
      reportErrors(errors, invalid)
      if (skipInvalid !== true) {
        console.error(
          `roster: ${invalid} invalid row(s); nothing was imported (fix them, or pass --skip-invalid to import the ${rows.length} valid row(s))`,
        )
        return 1
      }
    }
    const hashed = await hashPasswords(rows)
    const { inserted, conflicts } = deps.users.insertMany(hashed, {
      allOrNothing: skipInvalid !== true,
    })
    if (conflicts.length > 0) {
      reportErrors(
        conflicts.slice(0, ERRORS_SHOWN).map((index) => ({
          line: rows[index]?.line ?? 0,
          message: `a user with email ${rows[index]?.email} was created meanwhile`,
        })),
        conflicts.length,
      )
      if (skipInvalid !== true) {
        console.error('roster: nothing was imported')
        return 1
      }
    }
    const skipped = invalid + conflicts.length
    const seconds = ((performance.now() - started) / 1000).toFixed(2)
    console.log(
      `imported ${inserted.toLocaleString('en-US')} users in ${seconds} s${skipped > 0 ? `; skipped ${skipped} invalid row(s)` : ''}`,
    )
    return 0
  })
}

/** Rows with a plain password get its argon2id hash (two at a time, with progress). */
async function hashPasswords(
  rows: readonly ImportRow[],
): Promise<{ name: string; email: string; passwordHash: string | null }[]> {
  const toHash = rows.filter((row) => row.password !== null).length
  const progress = toHash > 0 ? new Progress('hashing passwords', null) : null
  const hashed = await Promise.all(
    rows.map(async (row) => {
      const passwordHash =
        row.password !== null ? await hashPassword(row.password) : row.passwordHash
      if (row.password !== null) progress?.advance(0, 1)
      return { name: row.name, email: row.email, passwordHash }
    }),
  )
  progress?.finish()
  return hashed
}

function reportErrors(errors: readonly RowError[], total: number): void {
  for (const error of errors) console.error(`line ${error.line}: ${error.message}`)
  if (total > errors.length) console.error(`… and ${total - errors.length} more`)
}

function parseFormat(value: string | boolean | undefined, fallback: TransferFormat) {
  if (value === undefined) return fallback
  if (value === 'jsonl' || value === 'csv') return value
  throw new ConfigError(
    `invalid value for --format: ${JSON.stringify(value)} (expected jsonl or csv)`,
  )
}

async function withDeps(
  serverFlags: Record<string, string | boolean>,
  env: Record<string, string | undefined>,
  work: (deps: Deps) => Promise<number>,
): Promise<number> {
  const deps = makeDeps(loadConfig(serverFlags, env), createLogger())
  try {
    return await work(deps)
  } finally {
    deps.close()
  }
}

async function readPasswordLine(): Promise<string> {
  const text = await Bun.stdin.text()
  const line = text.split(/\r?\n/, 1)[0] ?? ''
  if (line === '') throw new ConfigError('--password-stdin read no password')
  return line
}
