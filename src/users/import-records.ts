import { CsvParser, unguardFormula } from './csv'

/** The two file formats of import and export. */
export type TransferFormat = 'jsonl' | 'csv'

/** Fields an import reads: every field of an exported record, and a plain password. */
export const IMPORTED = new Set([
  'name',
  'email',
  'password',
  'password_hash',
  'username',
  'active',
  'role',
  'email_verified_at',
  'created_at',
  'updated_at',
  'groups',
  'scim',
])
/** Fields an import reads from JSON Lines only: a CSV cell holds no list. */
const NOT_IN_CSV = new Set(['groups', 'scim'])
/**
 * Fields an import accepts and drops: imported users get new ids (`version` is what older
 * exports of other tools may carry).
 */
export const IGNORED = new Set(['id', 'version'])

/** One row of an import as read, before validation. */
export type ImportRecord =
  | { line: number; value: Record<string, unknown> }
  | { line: number; error: string }

/** The input cannot be imported at all (bad header, unreadable encoding, broken CSV). */
export class ImportFileError extends Error {}

/**
 * Reads an import's rows from its bytes: JSON Lines (one object per line, blank lines
 * skipped) or CSV with a header row. Each row comes with the line it starts on.
 */
export async function* readRecords(
  source: AsyncIterable<Uint8Array>,
  format: TransferFormat,
  onBytes: (bytes: number) => void = () => {},
): AsyncGenerator<ImportRecord> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  const lines = format === 'csv' ? new CsvRows() : new JsonLines()
  try {
    for await (const chunk of source) {
      onBytes(chunk.byteLength)
      yield* lines.push(decoder.decode(chunk, { stream: true }))
    }
    yield* lines.push(decoder.decode())
    yield* lines.end()
  } catch (error) {
    if (error instanceof TypeError) throw new ImportFileError('the file is not valid UTF-8')
    if (error instanceof ImportFileError) throw error
    throw new ImportFileError((error as Error).message)
  }
}

class JsonLines {
  private rest = ''
  private line = 0;

  *push(text: string): Generator<ImportRecord> {
    const parts = (this.rest + text).split('\n')
    this.rest = parts.pop() ?? ''
    for (const part of parts) yield* this.parse(part)
  }

  *end(): Generator<ImportRecord> {
    if (this.rest !== '') yield* this.parse(this.rest)
    this.rest = ''
  }

  private *parse(text: string): Generator<ImportRecord> {
    this.line++
    const trimmed = text.trim()
    if (trimmed === '') return
    let value: unknown
    try {
      value = JSON.parse(trimmed)
    } catch {
      yield { line: this.line, error: 'not valid JSON' }
      return
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      yield { line: this.line, error: 'not a JSON object' }
      return
    }
    yield { line: this.line, value: value as Record<string, unknown> }
  }
}

class CsvRows {
  private readonly parser = new CsvParser()
  private header: string[] | null = null;

  *push(text: string): Generator<ImportRecord> {
    for (const record of this.parser.push(text)) yield* this.toRecord(record)
  }

  *end(): Generator<ImportRecord> {
    for (const record of this.parser.end()) yield* this.toRecord(record)
    if (this.header === null) throw new ImportFileError('the file is empty: CSV needs a header row')
  }

  private *toRecord(record: { line: number; fields: string[] }): Generator<ImportRecord> {
    if (this.header === null) {
      this.header = readHeader(record.fields)
      return
    }
    if (record.fields.length !== this.header.length) {
      yield {
        line: record.line,
        error: `has ${record.fields.length} fields; the header has ${this.header.length}`,
      }
      return
    }
    const value: Record<string, unknown> = {}
    this.header.forEach((column, i) => {
      const field = record.fields[i] as string
      // An empty cell is an absent value; the formula guard of an export comes off.
      if (field !== '') value[column] = cellValue(column, unguardFormula(field))
    })
    yield { line: record.line, value }
  }
}

/** `active` is a boolean: a cell's true or false (any case) becomes one; other text stays text. */
function cellValue(column: string, text: string): unknown {
  if (column !== 'active') return text
  const word = text.toLowerCase()
  return word === 'true' ? true : word === 'false' ? false : text
}

function readHeader(fields: string[]): string[] {
  const columns = fields.map((field) => field.trim().toLowerCase())
  const list = columns.find((c) => NOT_IN_CSV.has(c))
  if (list !== undefined) {
    throw new ImportFileError(
      `line 1: a CSV file cannot carry "${list}" (groups and SCIM profiles move in JSON Lines: roster users export --format jsonl)`,
    )
  }
  const unknown = columns.filter((c) => !IMPORTED.has(c) && !IGNORED.has(c))
  if (unknown.length > 0) {
    throw new ImportFileError(
      `line 1: unknown column ${JSON.stringify(unknown[0])} (roster reads name, email, username, password, password_hash, active, role, email_verified_at, created_at, updated_at; id and version are accepted and ignored)`,
    )
  }
  const repeated = columns.find((c, i) => columns.indexOf(c) !== i)
  if (repeated !== undefined)
    throw new ImportFileError(`line 1: column "${repeated}" appears twice`)
  for (const required of ['name', 'email']) {
    if (!columns.includes(required)) {
      throw new ImportFileError(`line 1: the header has no "${required}" column`)
    }
  }
  return columns
}
