import type { SQLQueryBindings } from 'bun:sqlite'
import type { GroupRecord } from '../../groups/records'
import type {
  ScimGroupQuery,
  ScimProfile,
  ScimProfileRows,
  ScimProfileWrites,
  ScimUserQuery,
  ScimUserRow,
} from '../../scim/profile'
import type { UserRecord } from '../../users/records'
import {
  conditionSql,
  GROUPS_FROM,
  orderBySql,
  PROFILE_COLUMNS,
  type ProfileRow,
  profileOf,
  profileValues,
  type ScimDialect,
} from '../scim-sql'
import type { Store } from './connection'
import { membersByOwner } from './groups'
import { settle } from './settle'

const USER_COLUMNS =
  'u.id, u.name, u.email, coalesce(u.username, u.email) AS username, u.active, u.created_at, u.updated_at, u.role, u.email_verified_at, u.version'
const FROM = 'users u LEFT JOIN user_profiles p ON p.user_id = u.id'

type Row = Omit<UserRecord, 'groups' | 'active'> & {
  active: number
  p_user_id: number | null
} & ProfileRow

/** SQLite's way of writing a compiled filter: `?` parameters, 0/1 booleans, JSON1's json_each. */
function sqliteDialect(params: SQLQueryBindings[]): ScimDialect {
  return {
    param(value) {
      params.push(typeof value === 'boolean' ? Number(value) : value)
      return '?'
    },
    // created_at holds toISOString()'s form, and so does the parameter: text compares in order.
    instant: (placeholder) => placeholder,
    booleanLiteral: (value) => (value ? '1' : '0'),
    otherEmails: {
      from: 'json_each(p.other_emails) AS e',
      field: (name) => `json_extract(e.value, '$.${name}')`,
    },
  }
}

/**
 * SCIM profiles in SQLite: lists on the reader (the page and its total in one snapshot),
 * profile writes inside the unit of work of the user's write.
 */
export function createSqliteScimRows(store: Store): ScimProfileRows & {
  readonly inUnit: ScimProfileWrites
} {
  const writer = store.db.$client
  const { reader } = store
  const upsert = writer.query(
    `INSERT INTO user_profiles (user_id, external_id, given_name, family_name, formatted_name,
       primary_email_type, other_emails, employee_number, department, manager_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (user_id) DO UPDATE SET external_id = excluded.external_id,
       given_name = excluded.given_name, family_name = excluded.family_name,
       formatted_name = excluded.formatted_name, primary_email_type = excluded.primary_email_type,
       other_emails = excluded.other_emails, employee_number = excluded.employee_number,
       department = excluded.department, manager_id = excluded.manager_id`,
  )
  const groupsOf = membersByOwner(reader, 'user_id')
  const list = store.snapshot((query: ScimUserQuery) => {
    const params: SQLQueryBindings[] = []
    const where = conditionSql(query.where, sqliteDialect(params))
    const total =
      reader
        .prepare<{ n: number }, SQLQueryBindings[]>(
          `SELECT count(*) AS n FROM ${FROM} WHERE ${where}`,
        )
        .get(...params)?.n ?? 0
    if (query.count === 0) return { total, rows: [] }
    // prepare, not query: a filter's text varies, and query() would cache each one for good.
    const rows = reader
      .prepare<Row, SQLQueryBindings[]>(
        `SELECT ${USER_COLUMNS}, ${PROFILE_COLUMNS} FROM ${FROM} WHERE ${where}
         ORDER BY ${orderBySql(query.sortBy, query.descending)} LIMIT ? OFFSET ?`,
      )
      .all(...params, query.count, query.offset)
    const groups = groupsOf(rows.map((row) => row.id))
    return { total, rows: rows.map((row) => rowOf(row, groups.get(row.id) ?? [])) }
  })
  const profilesRead = reader.query<ProfileRow & { user_id: number }, [string]>(
    `SELECT user_id, ${PROFILE_COLUMNS.replace('p.user_id AS p_user_id, ', '').replaceAll('p.', '')}
     FROM user_profiles WHERE user_id IN (SELECT value FROM json_each(?))`,
  )
  const groupMembers = membersByOwner(reader, 'group_id')
  const groupList = store.snapshot((query: ScimGroupQuery) => {
    const params: SQLQueryBindings[] = []
    const where = conditionSql(query.where, sqliteDialect(params))
    const total =
      reader
        .prepare<{ n: number }, SQLQueryBindings[]>(
          `SELECT count(*) AS n FROM ${GROUPS_FROM} WHERE ${where}`,
        )
        .get(...params)?.n ?? 0
    if (query.count === 0) return { total, rows: [] }
    const rows = reader
      .prepare<Omit<GroupRecord, 'members'> & { external_id: string | null }, SQLQueryBindings[]>(
        `SELECT g.id, g.name, g.description, g.version, g.created_at, g.updated_at, gp.external_id
         FROM ${GROUPS_FROM}
         WHERE ${where} ORDER BY ${orderBySql(query.sortBy, query.descending)} LIMIT ? OFFSET ?`,
      )
      .all(...params, query.count, query.offset)
    const members = query.withMembers ? groupMembers(rows.map((row) => row.id)) : new Map()
    return {
      total,
      rows: rows.map(({ external_id: externalId, ...group }) => ({
        group: { ...group, members: members.get(group.id) ?? [] },
        externalId,
      })),
    }
  })
  const externalIds = reader.query<{ group_id: number; external_id: string | null }, [string]>(
    'SELECT group_id, external_id FROM group_profiles WHERE group_id IN (SELECT value FROM json_each(?))',
  )
  const putGroupProfile = writer.query(
    `INSERT INTO group_profiles (group_id, external_id) VALUES (?, ?)
     ON CONFLICT (group_id) DO UPDATE SET external_id = excluded.external_id`,
  )
  const names = reader.query<{ id: number; name: string }, [string]>(
    'SELECT id, name FROM users WHERE id IN (SELECT value FROM json_each(?))',
  )
  return {
    listGroups: (query) => settle(() => groupList(query)),
    groupExternalIds: (ids) =>
      settle(
        () =>
          new Map(
            externalIds.all(JSON.stringify(ids)).map((row) => [row.group_id, row.external_id]),
          ),
      ),
    namesOf: (ids) =>
      settle(() => new Map(names.all(JSON.stringify(ids)).map((row) => [row.id, row.name]))),
    profilesOf: (ids) =>
      settle(() => {
        const found = new Map<number, ScimProfile>()
        for (const row of profilesRead.all(JSON.stringify(ids)))
          found.set(row.user_id, profileOf(row))
        return found
      }),
    listUsers: (query) => settle(() => list(query)),
    inUnit: {
      put: (userId, profile) => settle(() => void upsert.run(userId, ...profileValues(profile))),
      putGroupExternalId: (groupId, externalId) =>
        // The row stays with a null externalId: it also says the group is SCIM's (section 17).
        settle(() => {
          putGroupProfile.run(groupId, externalId)
        }),
    },
  }
}

function rowOf(row: Row, groups: number[]): ScimUserRow {
  const user: UserRecord = {
    id: row.id,
    name: row.name,
    email: row.email,
    username: row.username,
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    role: row.role,
    email_verified_at: row.email_verified_at,
    version: row.version,
    groups,
  }
  return { user, profile: profileOf(row) }
}
