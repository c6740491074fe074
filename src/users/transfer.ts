import { receivedText } from '../errors/details'
import { csvField } from './csv'
import { newUserProblems } from './fields'
import { IGNORED, IMPORTED, type TransferFormat } from './import-records'

export type { TransferFormat }

import { type ExportedUser, emailKey } from './records'
import type { UserStore } from './store'

const EXPORT_COLUMNS = ['id', 'name', 'email', 'created_at', 'updated_at'] as const

/**
 * The text of an export, a chunk per batch of users (the CSV header first); each line ends
 * with a line break.
 */
export async function* exportChunks(
  batches: AsyncIterable<readonly ExportedUser[]>,
  format: TransferFormat,
  withPasswordHashes: boolean,
): AsyncGenerator<string> {
  const columns: (keyof ExportedUser)[] = [...EXPORT_COLUMNS]
  if (withPasswordHashes) columns.push('password_hash')
  if (format === 'csv') yield `${columns.join(',')}\r\n`
  const line =
    format === 'csv'
      ? (user: ExportedUser) => `${columns.map((c) => csvField(user[c])).join(',')}\r\n`
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

/** A row that passed validation. */
export interface ImportRow {
  line: number
  name: string
  email: string
  password: string | null
  passwordHash: string | null
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
  private readonly seen = new Map<string, number>()

  constructor(private readonly users: UserStore) {}

  /** One row (see checkBatch). */
  async check(line: number, value: Record<string, unknown>): Promise<ImportRow | RowError> {
    return (await this.checkBatch([{ line, value }]))[0] as ImportRow | RowError
  }

  /**
   * Rows in file order; the emails of a batch are looked up in the database with one query
   * (a lookup per row cost a third of an import's time).
   */
  async checkBatch(
    records: readonly { line: number; value: Record<string, unknown> }[],
  ): Promise<(ImportRow | RowError)[]> {
    const checked = records.map(({ line, value }) => checkFields(line, value))
    const taken = await this.users.emailsTaken(
      checked.flatMap((row) => ('message' in row ? [] : [row.email])),
    )
    return checked.map((row): ImportRow | RowError => {
      if ('message' in row) return row
      const key = emailKey(row.email)
      const earlier = this.seen.get(key)
      if (earlier !== undefined) {
        return { line: row.line, message: `email ${row.email} is already on line ${earlier}` }
      }
      if (taken.has(key)) {
        return { line: row.line, message: `a user with email ${row.email} already exists` }
      }
      this.seen.set(key, row.line)
      return row
    })
  }
}

/** Everything about a row but whether its email is new. */
function checkFields(line: number, value: Record<string, unknown>): ImportRow | RowError {
  const problems: string[] = []
  const input: Record<string, unknown> = {}
  for (const [field, given] of Object.entries(value)) {
    if (IGNORED.has(field) || given === null) continue
    if (!IMPORTED.has(field)) problems.push(`unknown field ${JSON.stringify(field)}`)
    else if (field !== 'password_hash') input[field] = given
  }
  const hash = value.password_hash ?? null
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
  if (problems.length > 0) return { line, message: problems.join('; ') }
  return {
    line,
    name: input.name as string,
    email: input.email as string,
    password: (input.password as string | undefined) ?? null,
    passwordHash: hash as string | null,
  }
}
