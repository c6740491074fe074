import { fieldDetail } from '../errors/details'
import { type ErrorDetail, validationFailed } from '../errors/errors'
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
