import { hasDeceptiveCharacter } from '../text'

/**
 * What a user's fields may hold: the rules POST /users, PUT and PATCH check (through the
 * routes' schemas, built from these), and `roster users import`, `roster users create` and the
 * webhook handlers check with the same words.
 */
export const MAX_NAME_LENGTH = 200
export const MAX_EMAIL_LENGTH = 254
export const MAX_USERNAME_LENGTH = 254
export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 128
/** Longer than any password we accept, short enough that checking it costs nothing. */
export const MAX_CURRENT_PASSWORD_LENGTH = 1024

/** Each field's rule, as the error details word it. */
export const FIELD_RULES = {
  name: `must be 1–${MAX_NAME_LENGTH} characters after trimming, with no control characters, bidirectional controls or invisible characters`,
  email: `must be a valid email address of at most ${MAX_EMAIL_LENGTH} characters`,
  username: `must be 1–${MAX_USERNAME_LENGTH} characters, with no spaces at either end, no control characters, bidirectional controls or invisible characters`,
  password: `must be ${MIN_PASSWORD_LENGTH}–${MAX_PASSWORD_LENGTH} characters`,
  current_password: `must be at most ${MAX_CURRENT_PASSWORD_LENGTH} characters`,
} as const

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL_CHARACTER = /[\x00-\x1f\x7f-\x9f]/

/**
 * A name is 1–200 characters (code points) once trimmed, with no control characters (C0, DEL,
 * C1), no bidirectional controls or invisible characters (src/text.ts) and no unpaired
 * surrogates.
 */
export function isValidName(value: string): boolean {
  if (CONTROL_CHARACTER.test(value) || !value.isWellFormed() || hasDeceptiveCharacter(value)) {
    return false
  }
  const trimmed = value.trim()
  if (trimmed.length === 0 || trimmed.length > MAX_NAME_LENGTH * 2) return false
  let codePoints = 0
  for (const _ of trimmed) codePoints += 1
  return codePoints <= MAX_NAME_LENGTH
}

/**
 * A username (SCIM's userName: a login, an email, a UPN) is 1–254 characters (code points) of
 * well-formed text without control characters, bidirectional controls or invisible characters,
 * and without spaces at either end: it is an identifier, compared as typed but for case.
 */
export function isValidUsername(value: string): boolean {
  if (CONTROL_CHARACTER.test(value) || !value.isWellFormed() || hasDeceptiveCharacter(value)) {
    return false
  }
  if (value.length === 0 || value.trim() !== value || value.length > MAX_USERNAME_LENGTH * 2) {
    return false
  }
  let codePoints = 0
  for (const _ of value) codePoints += 1
  return codePoints <= MAX_USERNAME_LENGTH
}

/** The JSON Schema `email` format as Ajv and Elysia check it: a dotted domain, ASCII only. */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i

/** The `email` format alone (the schemas add the length). */
export const isValidEmail = (value: string): boolean => EMAIL.test(value)

/** An email a user may have: the format, at most 254 characters. */
export function isEmailAddress(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_EMAIL_LENGTH && isValidEmail(value)
}

const isPassword = (value: unknown): value is string =>
  typeof value === 'string' &&
  value.length >= MIN_PASSWORD_LENGTH &&
  value.length <= MAX_PASSWORD_LENGTH

/** What is wrong with one field of a new user: `is required`, or the field's rule. */
export interface FieldProblem {
  field: 'name' | 'email' | 'username' | 'password'
  message: string
}

/**
 * The problems of a new user's name, email, optional username and optional password, in that order: the checks
 * POST /users makes, for callers that have no schema (the CLI's import and create).
 */
export function newUserProblems(input: {
  name?: unknown
  email?: unknown
  username?: unknown
  password?: unknown
}): FieldProblem[] {
  const problems: FieldProblem[] = []
  const check = (field: FieldProblem['field'], value: unknown, valid: boolean) => {
    if (value === undefined) problems.push({ field, message: 'is required' })
    else if (!valid) problems.push({ field, message: FIELD_RULES[field] })
  }
  check('name', input.name, typeof input.name === 'string' && isValidName(input.name))
  check('email', input.email, isEmailAddress(input.email))
  if (
    input.username !== undefined &&
    !(typeof input.username === 'string' && isValidUsername(input.username))
  ) {
    problems.push({ field: 'username', message: FIELD_RULES.username })
  }
  if (input.password !== undefined && !isPassword(input.password)) {
    problems.push({ field: 'password', message: FIELD_RULES.password })
  }
  return problems
}
