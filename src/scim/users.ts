import { scimBadRequest } from '../errors/errors'
import { FIELD_RULES, isEmailAddress, isValidName, isValidUsername } from '../users/fields'
import { etagOf } from '../users/records'
import { booleanOf } from './filter'
import { attributeValue, ENTERPRISE_SCHEMA, USER_SCHEMA } from './names'
import { EMPTY_PROFILE, type OtherEmail, type ScimProfile, type ScimUserRow } from './profile'

/** The longest text roster keeps in a profile field (externalId, department, …). */
export const MAX_PROFILE_TEXT = 1024
/** At most this many emails on one user. */
const MAX_EMAILS = 20

/** `meta.version` and the ETag of a SCIM resource: the record's own strong ETag. */

/** A user as SCIM shows it (RFC 7643 section 4.1, with the enterprise extension). */
export function toScimUser(row: ScimUserRow, base: string): Record<string, unknown> {
  const { user, profile } = row
  const name = compact({
    formatted: profile.formattedName,
    givenName: profile.givenName,
    familyName: profile.familyName,
  })
  const enterprise = compact({
    employeeNumber: profile.employeeNumber,
    department: profile.department,
    manager:
      profile.managerId === null
        ? null
        : {
            value: profile.managerId,
            $ref: `${base}/Users/${encodeURIComponent(profile.managerId)}`,
          },
  })
  const hasEnterprise = Object.keys(enterprise).length > 0
  return {
    schemas: hasEnterprise ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: String(user.id),
    ...(profile.externalId === null ? {} : { externalId: profile.externalId }),
    userName: user.username,
    displayName: user.name,
    ...(Object.keys(name).length === 0 ? {} : { name }),
    emails: [
      compact({ value: user.email, type: profile.primaryEmailType, primary: true }),
      ...profile.otherEmails.map((other) => compact({ ...other, primary: false })),
    ],
    active: user.active,
    groups: user.groups.map((id) => ({
      value: String(id),
      $ref: `${base}/Groups/${id}`,
      type: 'direct',
    })),
    ...(hasEnterprise ? { [ENTERPRISE_SCHEMA]: enterprise } : {}),
    meta: {
      resourceType: 'User',
      created: user.created_at,
      lastModified: user.updated_at,
      location: `${base}/Users/${user.id}`,
      version: etagOf(user),
    },
  }
}

/** An object without its null fields. */
function compact<T extends Record<string, unknown>>(object: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(object).filter(([, value]) => value !== null),
  ) as Partial<T>
}

/** What a SCIM User body (POST or PUT, or a PATCH's result) asks roster to store. */
export interface ScimUserInput {
  name: string
  email: string
  username: string
  active: boolean
  /** A password to set; undefined leaves it as it is. */
  password: string | undefined
  profile: ScimProfile
}

/**
 * Reads a SCIM User: attribute names without regard to case, booleans as strings ("True"),
 * `primary` with a capital. The primary email (else the first) is roster's `email`; with no
 * email at all, a `userName` that is an address is used. 400 invalidValue names what is wrong.
 */
export function readScimUser(body: Record<string, unknown>): ScimUserInput {
  const username = attributeValue(body, 'userName')
  if (typeof username !== 'string' || !isValidUsername(username)) {
    throw invalid('userName', username === undefined ? 'is required' : FIELD_RULES.username)
  }
  const emails = readEmails(attributeValue(body, 'emails'))
  const primaryIndex = Math.max(
    0,
    emails.findIndex((entry) => entry.primary),
  )
  const primary = emails[primaryIndex]
  const email = primary?.value ?? username
  if (!isEmailAddress(email)) {
    throw invalid(
      'emails',
      primary === undefined
        ? 'a user needs an email: give emails, or a userName that is an email address'
        : FIELD_RULES.email,
    )
  }
  const nameObject = objectOrNull(attributeValue(body, 'name'), 'name')
  const formattedName = textOrNull(nameObject, 'formatted', 'name.formatted')
  const displayName = textOrNull(body, 'displayName', 'displayName')
  const name = (displayName ?? formattedName ?? username).trim()
  if (!isValidName(name)) throw invalid('displayName', FIELD_RULES.name)
  const active = readActive(attributeValue(body, 'active'))
  const password = attributeValue(body, 'password')
  if (password !== undefined && password !== null && typeof password !== 'string') {
    throw invalid('password', FIELD_RULES.password)
  }
  const enterprise = objectOrNull(attributeValue(body, ENTERPRISE_SCHEMA), ENTERPRISE_SCHEMA)
  return {
    name,
    email,
    username,
    active,
    password: typeof password === 'string' ? password : undefined,
    profile: {
      ...EMPTY_PROFILE,
      externalId: textOrNull(body, 'externalId', 'externalId'),
      givenName: textOrNull(nameObject, 'givenName', 'name.givenName'),
      familyName: textOrNull(nameObject, 'familyName', 'name.familyName'),
      formattedName,
      primaryEmailType: primary?.type ?? null,
      otherEmails: emails
        .filter((_, index) => index !== primaryIndex)
        .map(({ value, type, display }) => ({ value, type, display })),
      employeeNumber: textOrNull(enterprise, 'employeeNumber', 'employeeNumber'),
      department: textOrNull(enterprise, 'department', 'department'),
      managerId: readManager(
        enterprise === null ? undefined : attributeValue(enterprise, 'manager'),
      ),
    },
  }
}

/** `active`: true when left out; a boolean or its string ("True", "false"). */
export function readActive(value: unknown): boolean {
  if (value === undefined || value === null) return true
  const active = booleanOf(value)
  if (active === null) throw invalid('active', 'must be true or false')
  return active
}

function readEmails(value: unknown): (OtherEmail & { primary: boolean })[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw invalid('emails', 'must be an array of emails')
  if (value.length > MAX_EMAILS) throw invalid('emails', `may hold at most ${MAX_EMAILS} emails`)
  return value.map((entry, index) => {
    const path = `emails[${index}]`
    const object = objectOrNull(entry, path)
    if (object === null) throw invalid(path, 'must be an object with a value')
    const address = attributeValue(object, 'value')
    if (!isEmailAddress(address)) throw invalid(`${path}.value`, FIELD_RULES.email)
    const primary = attributeValue(object, 'primary')
    const isPrimary = primary === undefined || primary === null ? false : booleanOf(primary)
    if (isPrimary === null) throw invalid(`${path}.primary`, 'must be true or false')
    return {
      value: address,
      type: textOrNull(object, 'type', `${path}.type`),
      display: textOrNull(object, 'display', `${path}.display`),
      primary: isPrimary,
    }
  })
}

/** The enterprise manager: `{ "value": "…" }` as RFC 7643 has it, or the id alone. */
function readManager(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null
  if (typeof value === 'string') return checkedText(value, 'manager')
  const object = objectOrNull(value, 'manager')
  const id = object === null ? null : attributeValue(object, 'value')
  if (id === undefined || id === null || id === '') return null
  if (typeof id !== 'string') throw invalid('manager.value', 'must be a string')
  return checkedText(id, 'manager.value')
}

function objectOrNull(value: unknown, path: string): Record<string, unknown> | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(path, 'must be an object')
  return value as Record<string, unknown>
}

/** A text attribute of a body, checked as every kept text is; null when absent or null. */
export function textOrNull(object: Record<string, unknown> | null, name: string, path: string) {
  if (object === null) return null
  const value = attributeValue(object, name)
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw invalid(path, 'must be a string')
  return checkedText(value, path)
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/

function checkedText(value: string, path: string): string {
  if (value.length > MAX_PROFILE_TEXT || !value.isWellFormed() || CONTROL.test(value)) {
    throw invalid(
      path,
      `must be at most ${MAX_PROFILE_TEXT} characters of text without control characters`,
    )
  }
  return value
}

const invalid = (path: string, message: string) =>
  scimBadRequest('invalidValue', `${path} ${message}`)
