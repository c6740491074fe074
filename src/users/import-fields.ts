import { isRole, type Role } from '../auth/access'
import { receivedText } from '../errors/details'
import { groupNameKey } from '../groups/records'
import { MAX_PROFILE_TEXT } from '../scim/users'
import { isEmailAddress, isValidName } from './fields'
import type { TransferredProfile } from './records'

/**
 * The fields of an import row beyond a new user's name, email and password: the rest of an
 * exported record (export writes them, import reads them back), each checked as the record
 * keeps it. A check answers the value as stored, or a problem worded for the row's error line.
 */

export type Checked<T> = { value: T } | { problem: string }

const received = (value: unknown) => ` (received ${JSON.stringify(receivedText(value))})`

/** The largest id a user can have (PostgreSQL's `integer`). */
const MAX_ID = 2 ** 31 - 1

/** `id`, kept (--keep-ids): a positive integer (a CSV cell's digits arrive as text). */
export function checkId(value: unknown): Checked<number> {
  const id = typeof value === 'string' && /^[1-9]\d{0,9}$/.test(value) ? Number(value) : value
  if (typeof id === 'number' && Number.isInteger(id) && id >= 1 && id <= MAX_ID)
    return { value: id }
  const shown =
    value === undefined
      ? ' is required with --keep-ids'
      : ` must be a whole number from 1 to ${MAX_ID}${received(value)}`
  return { problem: `id${shown}` }
}

/** `active`: a boolean (a CSV cell's true or false arrives as one). */
export function checkActive(value: unknown): Checked<boolean> {
  return typeof value === 'boolean'
    ? { value }
    : { problem: `active must be true or false${received(value)}` }
}

export function checkRole(value: unknown): Checked<Role> {
  return isRole(value) ? { value } : { problem: `role must be member or admin${received(value)}` }
}

// RFC 3339 with a time zone: a date alone, or a local time, would be read in the importing
// machine's zone.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i

/**
 * A timestamp (created_at, updated_at, email_verified_at), kept as the API shows every one:
 * ISO 8601 in UTC with milliseconds, the form both databases store and compare.
 */
export function checkTimestamp(field: string, value: unknown): Checked<string> {
  const time = typeof value === 'string' && TIMESTAMP.test(value) ? Date.parse(value) : Number.NaN
  if (Number.isNaN(time)) {
    return {
      problem: `${field} must be a time such as 2026-01-31T12:00:00.000Z${received(value)}`,
    }
  }
  return { value: new Date(time).toISOString() }
}

/** `groups`: names of groups (as a group's name is checked), each once. */
export function checkGroups(value: unknown): Checked<string[]> {
  if (!Array.isArray(value)) return { problem: `groups must be a list of group names` }
  const keys = new Set<string>()
  for (const name of value) {
    if (typeof name !== 'string' || !isValidName(name)) {
      return { problem: `groups holds a name that is not a valid group name${received(name)}` }
    }
    const key = groupNameKey(name)
    if (keys.has(key)) return { problem: `groups names ${JSON.stringify(name)} twice` }
    keys.add(key)
  }
  return { value: value.map((name: string) => name.trim()) }
}

const PROFILE_TEXT = [
  'external_id',
  'given_name',
  'family_name',
  'formatted_name',
  'primary_email_type',
  'employee_number',
  'department',
  'manager_id',
] as const

/** At most this many other emails (SCIM's limit on a user's emails). */
const MAX_OTHER_EMAILS = 20

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/

/** A text of a profile, as SCIM keeps it: null, or at most 1024 characters without controls. */
function isProfileText(value: unknown): value is string | null {
  return (
    value === null ||
    (typeof value === 'string' &&
      value.length <= MAX_PROFILE_TEXT &&
      value.isWellFormed() &&
      !CONTROL.test(value))
  )
}

const TEXT_RULE = `null or at most ${MAX_PROFILE_TEXT} characters of text without control characters`

/**
 * `scim`: the SCIM profile as an export writes it, or null (none: not provisioned). Every
 * field of it is given, as an export gives them, so a typo cannot drop one unseen.
 */
export function checkProfile(value: unknown): Checked<TransferredProfile | null> {
  if (value === null) return { value: null }
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { problem: 'scim must be an object (a SCIM profile) or null' }
  }
  const given = value as Record<string, unknown>
  const known = new Set<string>([...PROFILE_TEXT, 'other_emails'])
  const unknown = Object.keys(given).find((key) => !known.has(key))
  if (unknown !== undefined)
    return { problem: `scim has an unknown field ${JSON.stringify(unknown)}` }
  for (const field of PROFILE_TEXT) {
    if (!(field in given)) return { problem: `scim.${field} is required (null when empty)` }
    if (!isProfileText(given[field])) return { problem: `scim.${field} must be ${TEXT_RULE}` }
  }
  const emails = checkOtherEmails(given.other_emails)
  if ('problem' in emails) return emails
  return {
    value: { ...(given as Omit<TransferredProfile, 'other_emails'>), other_emails: emails.value },
  }
}

function checkOtherEmails(value: unknown): Checked<TransferredProfile['other_emails']> {
  if (!Array.isArray(value) || value.length > MAX_OTHER_EMAILS) {
    return { problem: `scim.other_emails must be a list of at most ${MAX_OTHER_EMAILS} emails` }
  }
  const emails: TransferredProfile['other_emails'] = []
  for (const [index, entry] of value.entries()) {
    const path = `scim.other_emails[${index}]`
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      return { problem: `${path} must be an object with value, type and display` }
    }
    const {
      value: address,
      type = null,
      display = null,
      ...rest
    } = entry as Record<string, unknown>
    const extra = Object.keys(rest)[0]
    if (extra !== undefined)
      return { problem: `${path} has an unknown field ${JSON.stringify(extra)}` }
    if (!isEmailAddress(address)) return { problem: `${path}.value must be an email address` }
    if (!isProfileText(type) || !isProfileText(display)) {
      return { problem: `${path}.type and .display must be ${TEXT_RULE}` }
    }
    emails.push({ value: address, type, display })
  }
  return { value: emails }
}
