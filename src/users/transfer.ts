import type { Role } from '../auth/access'
import { receivedText } from '../errors/details'
import { csvField } from './csv'
import { newUserProblems } from './fields'
import {
  type Checked,
  checkActive,
  checkGroups,
  checkId,
  checkProfile,
  checkRole,
  checkTimestamp,
} from './import-fields'
import { IGNORED, IMPORTED, type TransferFormat } from './import-records'

export type { TransferFormat }

import {
  type ExportedUser,
  emailKey,
  type ImportedUser,
  type TransferredProfile,
  usernameKey,
} from './records'
import type { UserStore } from './store'

/** The fields of a record, in the order an export writes them; CSV has all but the lists. */
const RECORD_FIELDS = [
  'id',
  'name',
  'email',
  'username',
  'active',
  'role',
  'email_verified_at',
  'created_at',
  'updated_at',
] as const

export interface ExportOptions {
  /** Each user's password hash (the CLI's --with-password-hashes; never over HTTP). */
  passwordHashes: boolean
  /** Each user's SCIM profile (the CLI's; HTTP's users:read does not cover SCIM's data). */
  scimProfiles: boolean
}

/** How many exported users had what a CSV file cannot carry (so the CLI can say so). */
export interface LeftOut {
  groups: number
  scim: number
}

/**
 * The text of an export, a chunk per batch of users (the CSV header first); each line ends
 * with a line break. A CSV export leaves groups and SCIM profiles out and counts, in `leftOut`,
 * the users that had them.
 */
export async function* exportChunks(
  batches: AsyncIterable<readonly ExportedUser[]>,
  format: TransferFormat,
  options: ExportOptions,
  leftOut: LeftOut = { groups: 0, scim: 0 },
): AsyncGenerator<string> {
  const columns: (keyof ExportedUser)[] = [...RECORD_FIELDS]
  if (format === 'jsonl') columns.push('groups')
  if (format === 'jsonl' && options.scimProfiles) columns.push('scim')
  if (options.passwordHashes) columns.push('password_hash')
  if (format === 'csv') yield `${columns.join(',')}\r\n`
  const line =
    format === 'csv'
      ? (user: ExportedUser) => {
          if (user.groups.length > 0) leftOut.groups++
          if (options.scimProfiles && user.scim !== null) leftOut.scim++
          return `${columns.map((c) => csvField(cellOf(user[c]))).join(',')}\r\n`
        }
      : (user: ExportedUser) => {
          const fields: Record<string, unknown> = {}
          for (const column of columns) fields[column] = user[column]
          return `${jsonLine(fields)}\n`
        }
  for await (const batch of batches) {
    let chunk = ''
    for (const user of batch) chunk += line(user)
    yield chunk
  }
}

/** A CSV cell's value: the scalar fields only (true and false as words). */
function cellOf(value: ExportedUser[keyof ExportedUser]): string | number | null {
  if (typeof value === 'boolean') return String(value)
  if (typeof value === 'object' && value !== null) throw new Error('a list in a CSV cell')
  return value
}

/**
 * One object as a JSON Lines line. JSON leaves U+2028 and U+2029 as they are, but many line
 * readers (Python's splitlines, JavaScript's line terminators) end a line there: escaped, a name
 * holding one stays on its line.
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(/[\u2028\u2029]/g, (char) =>
    char === '\u2028' ? '\\u2028' : '\\u2029',
  )
}

/** A row that passed validation: a user as it will be inserted (its password not yet hashed). */
export interface ImportRow {
  line: number
  /** The id the user keeps (--keep-ids); null: it gets the next one. */
  id: number | null
  name: string
  email: string
  password: string | null
  passwordHash: string | null
  /** Null: the email. */
  username: string | null
  active: boolean
  role: Role
  emailVerifiedAt: string | null
  /** Null: the moment of the import. */
  createdAt: string | null
  updatedAt: string | null
  groups: string[]
  scim: TransferredProfile | null
}

/** A checked row as the store inserts it, with its password hash (the given one, or made). */
export function importedUser(row: ImportRow, passwordHash: string | null): ImportedUser {
  const user: ImportedUser = {
    name: row.name,
    email: row.email,
    passwordHash,
    username: row.username ?? row.email,
    active: row.active,
    role: row.role,
    emailVerifiedAt: row.emailVerifiedAt,
    groups: row.groups,
    scim: row.scim,
  }
  if (row.id !== null) user.id = row.id
  if (row.createdAt !== null) user.createdAt = row.createdAt
  if (row.updatedAt !== null) user.updatedAt = row.updatedAt
  return user
}

export interface RowError {
  line: number
  message: string
}

// argon2 (PHC strings) and bcrypt, which Bun.password.verify reads. The cost parameters are
// capped: a hash with a huge memory cost would make every sign-in of that user a denial of
// service (at most 64 MiB, as roster's own hashes use).
const ARGON2 =
  /^\$argon2(id|i|d)\$v=19\$m=(\d{1,7}),t=(\d{1,3}),p=(\d{1,2})\$[A-Za-z0-9+/]{11,86}\$[A-Za-z0-9+/]{16,86}$/
const BCRYPT = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/

function passwordHashProblem(hash: string): string | null {
  const argon2 = ARGON2.exec(hash)
  if (argon2 !== null) {
    const [memory, time, lanes] = [Number(argon2[2]), Number(argon2[3]), Number(argon2[4])]
    if (memory > 65536 || time > 16 || lanes > 8) {
      return 'password_hash has argon2 costs above m=65536,t=16,p=8'
    }
    return null
  }
  const bcrypt = BCRYPT.exec(hash)
  if (bcrypt !== null)
    return Number(bcrypt[1]) > 16 ? 'password_hash has a bcrypt cost above 16' : null
  return 'password_hash must be an argon2 (PHC string) or bcrypt hash'
}

/**
 * Checks each row as POST /users would (name, email, password rules), plus password_hash, and
 * email uniqueness against the database and the rows before it. Messages never include a
 * password or a hash.
 */
export class RowValidator {
  /** The sign-in names (emails and usernames, folded) of the rows so far, with their lines. */
  private readonly seen = new Map<string, number>()
  /** The ids kept so far (--keep-ids), with their lines. */
  private readonly ids = new Map<number, number>()

  /** `keepIds`: each row's `id` is required and kept (an import into a roster with no users). */
  constructor(
    private readonly users: UserStore,
    private readonly options: { keepIds: boolean } = { keepIds: false },
  ) {}

  /** One row (see checkBatch). */
  async check(line: number, value: Record<string, unknown>): Promise<ImportRow | RowError> {
    return (await this.checkBatch([{ line, value }]))[0] as ImportRow | RowError
  }

  /**
   * Rows in file order; the emails and usernames of a batch are looked up in the database with
   * one query (a lookup per row cost a third of an import's time). An email or username may be
   * no other user's email or username: a sign-in looks a name up as either.
   */
  async checkBatch(
    records: readonly { line: number; value: Record<string, unknown> }[],
  ): Promise<(ImportRow | RowError)[]> {
    const checked = records.map(({ line, value }) => checkFields(line, value, this.options.keepIds))
    const names = checked.map((row) => ('message' in row ? [] : signInNames(row)))
    const taken = await this.users.emailsTaken(names.flat().map(({ name }) => name))
    return checked.map((row, index): ImportRow | RowError => {
      if ('message' in row) return row
      const sameId = row.id === null ? undefined : this.ids.get(row.id)
      if (sameId !== undefined) {
        return { line: row.line, message: `id ${row.id} is already on line ${sameId}` }
      }
      const own = names[index] as SignInName[]
      for (const { field, name, key } of own) {
        const earlier = this.seen.get(key)
        if (earlier !== undefined) {
          return { line: row.line, message: `${field} ${name} is already on line ${earlier}` }
        }
        if (taken.has(key)) {
          return { line: row.line, message: `a user with ${field} ${name} already exists` }
        }
      }
      for (const { key } of own) this.seen.set(key, row.line)
      if (row.id !== null) this.ids.set(row.id, row.line)
      return row
    })
  }
}

/** A name a user signs in with, and the key its uniqueness is decided on. */
interface SignInName {
  field: 'email' | 'username'
  name: string
  key: string
}

/** The names a row's user signs in with: its email, and its username when that differs. */
function signInNames(row: ImportRow): SignInName[] {
  const email = { field: 'email' as const, name: row.email, key: emailKey(row.email) }
  if (row.username === null) return [email]
  const key = usernameKey(row.username)
  return key === email.key ? [email] : [email, { field: 'username', name: row.username, key }]
}

/** Everything about a row but whether its sign-in names are new. */
function checkFields(
  line: number,
  value: Record<string, unknown>,
  keepIds: boolean,
): ImportRow | RowError {
  const problems: string[] = []
  const input: Record<string, unknown> = {}
  for (const [field, given] of Object.entries(value)) {
    const kept = IMPORTED.has(field) || (keepIds && field === 'id')
    if ((IGNORED.has(field) && !kept) || given === null) continue
    if (!kept) problems.push(`unknown field ${JSON.stringify(field)}`)
    else input[field] = given
  }
  const hash = input.password_hash ?? null
  if (hash !== null) {
    const problem =
      typeof hash === 'string' ? passwordHashProblem(hash) : 'password_hash must be a string'
    if (problem !== null) problems.push(problem)
    if (input.password !== undefined) problems.push('give password or password_hash, not both')
  }
  for (const { field, message } of newUserProblems(input)) {
    const shown = field === 'password' ? undefined : receivedText(input[field])
    problems.push(
      `${field} ${message}${shown === undefined || message === 'is required' ? '' : ` (received ${JSON.stringify(shown)})`}`,
    )
  }
  const optional = <T>(field: string, check: (given: unknown) => Checked<T>, absent: T): T =>
    optionalField(input[field], check, absent, problems)
  let id: number | null = null
  if (keepIds) {
    const checked = checkId(input.id)
    if ('problem' in checked) problems.push(checked.problem)
    else id = checked.value
  }
  const row: ImportRow = {
    line,
    id,
    name: input.name as string,
    email: input.email as string,
    password: (input.password as string | undefined) ?? null,
    passwordHash: hash as string | null,
    username: (input.username as string | undefined) ?? null,
    active: optional('active', checkActive, true),
    role: optional('role', checkRole, 'member'),
    emailVerifiedAt: optional('email_verified_at', checkVerifiedAt, null),
    createdAt: optional('created_at', checkCreatedAt, null),
    updatedAt: optional('updated_at', checkUpdatedAt, null),
    groups: optional('groups', checkGroups, []),
    scim: optional('scim', checkProfile, null),
  }
  if (problems.length > 0) return { line, message: problems.join('; ') }
  return row
}

/** A field the row may leave out: `absent` then, else its checked value (or a problem). */
function optionalField<T>(
  given: unknown,
  check: (given: unknown) => Checked<T>,
  absent: T,
  problems: string[],
): T {
  if (given === undefined) return absent
  const result = check(given)
  if ('problem' in result) problems.push(result.problem)
  return 'value' in result ? result.value : absent
}

const checkVerifiedAt = (value: unknown) => checkTimestamp('email_verified_at', value)
const checkCreatedAt = (value: unknown) => checkTimestamp('created_at', value)
const checkUpdatedAt = (value: unknown) => checkTimestamp('updated_at', value)
