import { fieldDetail } from '../errors/details'
import { type ErrorDetail, ScimError, validationFailed } from '../errors/errors'
import { reachesPrototype } from '../own-keys'
import { hasControlCharacter } from './control-characters'

const DIGITS = /^[0-9]+$/

/**
 * Reads query parameters strictly, collecting every problem before failing, so one
 * VALIDATION_ERROR names all bad parameters. Numbers are plain decimal digits only: `1e2`,
 * `0x10`, ` 5` and `-1` are refused with the text received, and a parameter given twice is
 * refused rather than silently resolved.
 */
export class QueryReader {
  private readonly params: URLSearchParams
  private readonly problems: ErrorDetail[] = []

  constructor(url: string) {
    const start = url.indexOf('?')
    this.params = new URLSearchParams(start === -1 ? '' : url.slice(start + 1))
  }

  /** The parameter's single value, or undefined when absent. */
  string(name: string, options: { maxLength?: number } = {}): string | undefined {
    const values = this.params.getAll(name)
    if (values.length === 0) return undefined
    if (values.length > 1) {
      this.problems.push(fieldDetail(name, 'must be given at most once', values.join(',')))
      return undefined
    }
    const value = values[0] as string
    // No parameter has a use for them, and one database cannot even compare U+0000.
    if (hasControlCharacter(value)) {
      this.problems.push(fieldDetail(name, 'must not contain control characters', value))
      return undefined
    }
    if (options.maxLength !== undefined && value.length > options.maxLength) {
      this.problems.push(
        fieldDetail(name, `must be at most ${options.maxLength} characters`, value),
      )
      return undefined
    }
    return value
  }

  /** A whole number in [min, max], `fallback` when absent. */
  integer(name: string, options: { min: number; max?: number; fallback: number }): number {
    const text = this.string(name)
    if (text === undefined) return options.fallback
    const value = Number(text)
    const inRange =
      DIGITS.test(text) &&
      Number.isSafeInteger(value) &&
      value >= options.min &&
      (options.max === undefined || value <= options.max)
    if (!inRange) {
      const range =
        options.max === undefined
          ? `a whole number of at least ${options.min}`
          : `a whole number from ${options.min} to ${options.max}`
      this.problems.push(fieldDetail(name, `must be ${range}`, text))
      return options.fallback
    }
    return value
  }

  /** One of `choices` (exactly, case included), `fallback` when absent. */
  oneOf<T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const text = this.string(name)
    if (text === undefined) return fallback
    if ((choices as readonly string[]).includes(text)) return text as T
    this.problems.push(fieldDetail(name, `must be one of ${choices.join(', ')}`, text))
    return fallback
  }

  /** Whether `name` was read without a problem (absent counts as valid). */
  isValid(name: string): boolean {
    return !this.problems.some((problem) => problem.field === name)
  }

  has(name: string): boolean {
    return this.params.has(name)
  }

  /** Records a problem found by the caller, so it is reported with the others. */
  reject(name: string, message: string, received?: string): void {
    this.problems.push(fieldDetail(name, message, received))
  }

  /** Throws one VALIDATION_ERROR listing every problem seen, if there were any. */
  assertValid(): void {
    if (this.problems.length > 0) throw validationFailed(this.problems)
  }
}

/**
 * Refuses a query whose parameter names lead into a prototype (`?__proto__[x]=1`,
 * `?filter[constructor]=…`, percent-encoded or not): no route has such a parameter, and a
 * reader that turns names into nested objects would follow them (CONTRACT section 17).
 * Values are not names and may hold any text. Most queries name none of these words, so the
 * common path is one scan of the raw query. Checked before routing, like a path that cannot be
 * decoded, so the answer is the same 400 on every path (SCIM's invalidPath under /scim/v2).
 */
export function refusePrototypeQueryKeys(request: Request): void {
  const url = request.url
  const start = url.indexOf('?')
  if (start === -1) return
  const query = url.slice(start + 1)
  if (!/proto|constructor|%/i.test(query)) return
  let params: URLSearchParams
  try {
    params = new URLSearchParams(query)
  } catch {
    return
  }
  for (const name of params.keys()) {
    if (reachesPrototype(name)) throw prototypeQueryKeyRefused(name)
  }
}

function prototypeQueryKeyRefused(name: string): ScimError {
  return new ScimError('BAD_REQUEST', 'invalidPath', 'The query names a parameter no route has', [
    fieldDetail(name, 'is not a name a parameter may have (__proto__, constructor, prototype)'),
  ])
}
