import { existsSync, statSync } from 'node:fs'
import { extname } from 'node:path'
import { hashPassword } from '../auth/passwords'
import { ConfigError } from '../config'
import { readRecords } from '../users/import-records'
import type { ImportedUser } from '../users/records'
import { type ImportRow, importedUser, type RowError, RowValidator } from '../users/transfer'
import { configFlags, databaseFlags, type FlagSpec, parseFlags } from './args'
import { Progress } from './progress'
import { FORMAT_FLAG, parseFormat, withDeps } from './users-common'

export const IMPORT_FLAGS: FlagSpec[] = [
  { ...FORMAT_FLAG, defaultText: 'by the file name (.csv), else jsonl' },
  {
    flag: 'skip-invalid',
    env: [],
    defaultText: 'false',
    help: 'import the valid rows and report the others, instead of importing nothing when a row is invalid',
    boolean: true,
  },
  {
    flag: 'keep-ids',
    env: [],
    defaultText: 'false',
    help: 'give each user the id in the file (a move: SCIM clients and API callers keep their ids); only into a roster with no users',
    boolean: true,
  },
  ...databaseFlags(),
]

/** Rows whose emails are looked up together. */
const CHECK_BATCH = 500
/** Errors listed before "… and N more". */
const ERRORS_SHOWN = 20

/** `roster users import FILE`: every row checked first; by default all or nothing. */
export async function importUsers(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags, positionals } = parseFlags('users', args, IMPORT_FLAGS, 1)
  const [path] = positionals
  if (path === undefined) throw new ConfigError('import needs a FILE (see roster users --help)')
  const {
    format,
    'skip-invalid': skipInvalid,
    'keep-ids': keepIds,
    ...serverFlags
  } = configFlags(flags)
  const chosen = parseFormat(format, extname(path).toLowerCase() === '.csv' ? 'csv' : 'jsonl')
  const fromStdin = path === '-'
  if (!fromStdin && (!existsSync(path) || !statSync(path).isFile())) {
    throw new ConfigError(`cannot read ${path}: no such file`)
  }
  const started = performance.now()
  if (chosen === 'csv') {
    // Said before anything else: a CSV export left these out, and nothing here can tell.
    console.error(
      'roster: note: a CSV file carries no groups and no SCIM profiles; the imported users get none (move them with JSON Lines: roster users export --format jsonl)',
    )
  }
  return await withDeps(serverFlags, env, async (deps) => {
    if (keepIds === true) {
      const existing = await deps.users.count()
      if (existing > 0) {
        console.error(
          `roster: --keep-ids imports only into a roster with no users; this one has ${existing.toLocaleString('en-US')} (their ids could be the file's)`,
        )
        return 1
      }
    }
    const validator = new RowValidator(deps.users, { keepIds: keepIds === true })
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
    const checkBatch = async () => {
      for (const result of await validator.checkBatch(batch)) keep(result)
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
      if (batch.length >= CHECK_BATCH) await checkBatch()
    }
    await checkBatch()
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
    const { inserted, conflicts } = await deps.users.insertMany(hashed, {
      allOrNothing: skipInvalid !== true,
    })
    if (conflicts.length > 0) {
      reportErrors(
        conflicts.slice(0, ERRORS_SHOWN).map((index) => ({
          line: rows[index]?.line ?? 0,
          message: `a user with ${signInNamesOf(rows[index])} was created meanwhile`,
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
async function hashPasswords(rows: readonly ImportRow[]): Promise<ImportedUser[]> {
  const toHash = rows.filter((row) => row.password !== null).length
  const progress = toHash > 0 ? new Progress('hashing passwords', null) : null
  const hashed = await Promise.all(
    rows.map(async (row) => {
      const passwordHash =
        row.password !== null ? await hashPassword(row.password) : row.passwordHash
      if (row.password !== null) progress?.advance(0, 1)
      return importedUser(row, passwordHash)
    }),
  )
  progress?.finish()
  return hashed
}

/** What a row's user signs in with, for a line about a clash. */
function signInNamesOf(row: ImportRow | undefined): string {
  if (row?.username == null || row.username === row.email) return `email ${row?.email}`
  return `email ${row.email} or username ${row.username}`
}

function reportErrors(errors: readonly RowError[], total: number): void {
  for (const error of errors) console.error(`line ${error.line}: ${error.message}`)
  if (total > errors.length) console.error(`… and ${total - errors.length} more`)
}
