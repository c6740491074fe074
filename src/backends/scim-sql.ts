import type {
  Attribute,
  CompareOp,
  Condition,
  EmailField,
  GroupColumn,
  UserColumn,
} from '../scim/filter'
import type { GroupSortKey, OtherEmail, ScimProfile, SortKey } from '../scim/profile'

/**
 * A SCIM filter's Condition as SQL over `users u LEFT JOIN user_profiles p`, written once for
 * both databases: a dialect says how each names a parameter, a boolean, an instant and the
 * elements of `other_emails`. Every value is a parameter; only fixed column names are written
 * into the text.
 */
export interface ScimDialect {
  /** Adds a parameter and gives its placeholder (`?` or `$n`). */
  param(value: string | number | boolean): string
  /** An instant parameter as a value `created_at` and `updated_at` compare with. */
  instant(placeholder: string): string
  /** `true`/`false` as the `active` column holds them. */
  booleanLiteral(value: boolean): string
  /** `FROM … AS e` over the JSON array `p.other_emails`, and a field of its element `e`. */
  otherEmails: { from: string; field(name: 'value' | 'type' | 'display'): string }
}

const USER_COLUMNS: Record<UserColumn, string> = {
  id: 'u.id',
  username: 'u.username_key',
  name: 'u.name',
  external_id: 'p.external_id',
  given_name: 'p.given_name',
  family_name: 'p.family_name',
  formatted_name: 'p.formatted_name',
  active: 'u.active',
  created_at: 'u.created_at',
  updated_at: 'u.updated_at',
  employee_number: 'p.employee_number',
  department: 'p.department',
  manager_id: 'p.manager_id',
}

/** What a Groups list reads: the groups and what SCIM keeps of them (GROUP_COLUMNS' aliases). */
export const GROUPS_FROM = 'groups g LEFT JOIN group_profiles gp ON gp.group_id = g.id'

const GROUP_COLUMNS: Record<GroupColumn, string> = {
  group_id: 'g.id',
  group_name: 'g.name_key',
  group_external_id: 'gp.external_id',
  group_created_at: 'g.created_at',
  group_updated_at: 'g.updated_at',
}

/** Columns that already hold their value lower-cased (compared without lower()). */
const FOLDED = new Set(['u.username_key', 'u.email_key', 'g.name_key'])

/**
 * Where the fields of one value of a multi-valued attribute come from, inside its value path:
 * an email (the primary, from the record, or an element of the others) or a member.
 */
type EmailBinding = (field: EmailField) => string | null

/** The SQL of a condition; parameters go to the dialect. */
export function conditionSql(condition: Condition, dialect: ScimDialect): string {
  return compile(condition, dialect, null)
}

function compile(condition: Condition, dialect: ScimDialect, email: EmailBinding | null): string {
  switch (condition.kind) {
    case 'all':
      return '(1 = 1)'
    case 'none':
      return '(1 = 0)'
    case 'and':
    case 'or':
      return `(${condition.parts.map((part) => compile(part, dialect, email)).join(` ${condition.kind.toUpperCase()} `)})`
    case 'not':
      // IS NOT TRUE: a comparison with an absent value (NULL) is not true, so its negation is.
      return `((${compile(condition.part, dialect, email)}) IS NOT TRUE)`
    case 'anyEmail': {
      const primary = compile(condition.where, dialect, primaryEmail(dialect))
      const other = compile(condition.where, dialect, otherEmail(dialect))
      return `(${primary} OR EXISTS (SELECT 1 FROM ${dialect.otherEmails.from} WHERE ${other}))`
    }
    case 'anyMember': {
      const where = compile(condition.where, dialect, () => 'm.user_id')
      return `EXISTS (SELECT 1 FROM group_members m WHERE m.group_id = g.id AND ${where})`
    }
    case 'present': {
      const column = columnOf(condition.attribute, email)
      if (column === null) return '(1 = 0)'
      return condition.attribute.type === 'string'
        ? `(${column} IS NOT NULL AND ${column} <> '')`
        : `(${column} IS NOT NULL)`
    }
    case 'compare':
      return comparison(condition.attribute, condition.op, condition.value, dialect, email)
  }
}

function primaryEmail(dialect: ScimDialect): EmailBinding {
  return (field) =>
    field === 'value'
      ? 'u.email_key'
      : field === 'type'
        ? 'p.primary_email_type'
        : field === 'primary'
          ? dialect.booleanLiteral(true)
          : null
}

function otherEmail(dialect: ScimDialect): EmailBinding {
  return (field) =>
    field === 'primary' ? dialect.booleanLiteral(false) : dialect.otherEmails.field(field)
}

function columnOf(attribute: Attribute, inner: EmailBinding | null): string | null {
  if (attribute.scope === 'user') return USER_COLUMNS[attribute.column]
  if (attribute.scope === 'group') return GROUP_COLUMNS[attribute.column]
  return inner === null ? null : inner(attribute.field)
}

const SQL_OPS: Record<'eq' | 'gt' | 'ge' | 'lt' | 'le', string> = {
  eq: '=',
  gt: '>',
  ge: '>=',
  lt: '<',
  le: '<=',
}

function comparison(
  attribute: Attribute,
  op: CompareOp,
  value: string | number | boolean,
  dialect: ScimDialect,
  email: EmailBinding | null,
): string {
  const column = columnOf(attribute, email)
  if (column === null) return op === 'ne' ? '(1 = 1)' : '(1 = 0)'
  if (op === 'ne') {
    return `((${comparison(attribute, 'eq', value, dialect, email)}) IS NOT TRUE)`
  }
  if (attribute.type === 'boolean') {
    return `(${column} = ${dialect.booleanLiteral(value as boolean)})`
  }
  if (attribute.type === 'id') {
    return `(${column} ${SQL_OPS[op as 'eq']} CAST(${dialect.param(value)} AS BIGINT))`
  }
  if (attribute.type === 'date') {
    return `(${column} ${SQL_OPS[op as 'eq']} ${dialect.instant(dialect.param(value))})`
  }
  const folded = !attribute.caseExact
  const left = folded && !FOLDED.has(column) ? `lower(${column})` : column
  const text = folded ? String(value).toLowerCase() : String(value)
  if (op === 'co' || op === 'sw' || op === 'ew') {
    const escaped = text.replace(/[\\%_]/g, (character) => `\\${character}`)
    const pattern = op === 'co' ? `%${escaped}%` : op === 'sw' ? `${escaped}%` : `%${escaped}`
    return `(${left} LIKE ${dialect.param(pattern)} ESCAPE '\\')`
  }
  return `(${left} ${SQL_OPS[op]} ${dialect.param(text)})`
}

/** The column a list is sorted by; absent values last on both databases. */
export const SORT_COLUMNS: Record<SortKey, string> = {
  ...USER_COLUMNS,
  email: 'u.email_key',
}

export function orderBySql(sortBy: SortKey | GroupSortKey, descending: boolean): string {
  const column =
    sortBy in GROUP_COLUMNS
      ? GROUP_COLUMNS[sortBy as GroupSortKey]
      : SORT_COLUMNS[sortBy as SortKey]
  const direction = descending ? 'DESC' : 'ASC'
  const id = sortBy in GROUP_COLUMNS ? 'g.id' : 'u.id'
  return `(${column} IS NULL), ${column} ${direction}, ${id} ${direction}`
}

/** The profile columns a list selects beside the user's (null for a user without one). */
export const PROFILE_COLUMNS =
  'p.user_id AS p_user_id, p.external_id, p.given_name, p.family_name, p.formatted_name, p.primary_email_type, p.other_emails, p.employee_number, p.department, p.manager_id'

export interface ProfileRow {
  external_id: string | null
  given_name: string | null
  family_name: string | null
  formatted_name: string | null
  primary_email_type: string | null
  other_emails: string | null
  employee_number: string | null
  department: string | null
  manager_id: string | null
}

export function profileOf(row: ProfileRow): ScimProfile {
  return {
    externalId: row.external_id,
    givenName: row.given_name,
    familyName: row.family_name,
    formattedName: row.formatted_name,
    primaryEmailType: row.primary_email_type,
    otherEmails: JSON.parse(row.other_emails ?? '[]') as OtherEmail[],
    employeeNumber: row.employee_number,
    department: row.department,
    managerId: row.manager_id,
  }
}

/** A profile's values in column order, for an insert (after the user id). */
export function profileValues(profile: ScimProfile) {
  return [
    profile.externalId,
    profile.givenName,
    profile.familyName,
    profile.formattedName,
    profile.primaryEmailType,
    JSON.stringify(profile.otherEmails),
    profile.employeeNumber,
    profile.department,
    profile.managerId,
  ] as const
}
