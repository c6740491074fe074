/** One CSV record with the line it starts on (1-based). */
export interface CsvRecord {
  line: number
  fields: string[]
}

/** A record longer than this is refused: it is almost always an unclosed quote. */
export const MAX_RECORD_CHARS = 1024 * 1024

const QUOTE = 34
const COMMA = 44
const LF = 10
const CR = 13

/** The input cannot be read as CSV past this point (the import stops). */
export class CsvSyntaxError extends Error {}

enum State {
  FieldStart,
  Unquoted,
  Quoted,
  /** A quote inside a quoted field: a second quote is a literal one, anything else closes it. */
  QuoteInQuoted,
}

/**
 * A streaming RFC 4180 parser: fields separated by commas, records by CRLF, LF or CR; a quoted
 * field may hold commas, line breaks and doubled quotes. A quote inside an unquoted field is
 * kept as it is. Text is pushed in chunks of any size; records come out as they complete.
 */
export class CsvParser {
  private state = State.FieldStart
  private field = ''
  private fields: string[] = []
  private line = 1
  private recordLine = 1
  private recordChars = 0
  /** The last character was a CR: an LF right after it belongs to the same line break. */
  private afterCr = false

  push(text: string): CsvRecord[] {
    const out: CsvRecord[] = []
    // Characters of the field in progress are copied in runs, from `run` up to the current one.
    let run = this.state === State.Unquoted || this.state === State.Quoted ? 0 : -1
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      const isLf = c === LF
      if (isLf && this.afterCr) {
        this.afterCr = false
        if (run !== -1) run = i + 1
        continue
      }
      this.afterCr = c === CR
      const isBreak = isLf || c === CR
      if (++this.recordChars > MAX_RECORD_CHARS) {
        throw new CsvSyntaxError(
          `line ${this.recordLine}: a record longer than 1 MiB (is a quote left open?)`,
        )
      }
      switch (this.state) {
        case State.Quoted:
          if (c === QUOTE) {
            this.field += text.slice(run, i)
            run = -1
            this.state = State.QuoteInQuoted
          } else if (isBreak) {
            this.line++
          }
          break
        case State.QuoteInQuoted:
          if (c === QUOTE) {
            this.field += '"'
            run = i + 1
            this.state = State.Quoted
          } else if (c === COMMA || isBreak) {
            this.endField(isBreak, out)
          } else {
            throw new CsvSyntaxError(
              `line ${this.line}: a character after a closing quote (quote the whole field)`,
            )
          }
          break
        case State.Unquoted:
          if (c === COMMA || isBreak) {
            this.field += text.slice(run, i)
            run = -1
            this.endField(isBreak, out)
          }
          break
        case State.FieldStart:
          if (c === QUOTE) {
            this.state = State.Quoted
            run = i + 1
          } else if (c === COMMA || isBreak) {
            this.endField(isBreak, out)
          } else {
            this.state = State.Unquoted
            run = i
          }
          break
      }
    }
    if (run !== -1) this.field += text.slice(run)
    return out
  }

  /** Ends the input: the last record if it has no line break, or an error for an open quote. */
  end(): CsvRecord[] {
    if (this.state === State.Quoted) {
      throw new CsvSyntaxError(`line ${this.recordLine}: a quoted field is not closed`)
    }
    const out: CsvRecord[] = []
    if (this.state !== State.FieldStart || this.fields.length > 0) this.endField(true, out)
    return out
  }

  private endField(endsRecord: boolean, out: CsvRecord[]): void {
    this.fields.push(this.field)
    this.field = ''
    this.state = State.FieldStart
    if (!endsRecord) return
    const fields = this.fields
    this.fields = []
    this.recordChars = 0
    // A blank line is no record.
    if (!(fields.length === 1 && fields[0] === '')) out.push({ line: this.recordLine, fields })
    this.line++
    this.recordLine = this.line
  }
}

const NEEDS_QUOTES = /[",\r\n]/
/**
 * Text that gets the ' guard: what a spreadsheet runs as a formula (= + - @, tab, CR), and text
 * that already starts with ', so that a name such as '=x comes back from an import as it was.
 */
const GUARDED_START = /^[=+\-@\t\r']/

/**
 * One CSV field: quoted when it must be, and prefixed with ' when a spreadsheet would take it
 * for a formula (a name like =HYPERLINK(…) is user input). Import strips that prefix again.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return ''
  let text = String(value)
  if (typeof value === 'string' && GUARDED_START.test(text)) text = `'${text}`
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** Undoes csvField's guard: one ' in front of text that would have been guarded. */
export function unguardFormula(text: string): string {
  return text.length > 1 && text[0] === "'" && GUARDED_START.test(text.slice(1))
    ? text.slice(1)
    : text
}
