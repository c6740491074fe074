import type { SQL } from 'bun'
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
import { type Stored, withIsoTimestamps } from './timestamps'

const USER_COLUMNS = `u.id, u.name, u.email, coalesce(u.username, u.email) AS username, u.active, u.created_at, u.updated_at, u.role,
  to_char(u.email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at, u.version,
  coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = u.id), '[]'::json) AS groups`
const FROM = 'users u LEFT JOIN user_profiles p ON p.user_id = u.id'

type Row = Omit<UserRecord, 'created_at' | 'updated_at'> & {
  created_at: Date | null
  updated_at: Date
  total: string
} & ProfileRow

/** PostgreSQL's way of writing a compiled filter: `$n` parameters, jsonb's array elements. */
function pgDialect(params: (string | number | boolean)[]): ScimDialect {
  return {
    param(value) {
      params.push(value)
      return `$${params.length}`
    },
    instant: (placeholder) => `${placeholder}::timestamptz`,
    booleanLiteral: (value) => (value ? 'true' : 'false'),
    otherEmails: {
      from: 'jsonb_array_elements(p.other_emails::jsonb) AS e(v)',
      field: (name) => `(e.v ->> '${name}')`,
    },
  }
}

const UPSERT = `INSERT INTO user_profiles (user_id, external_id, given_name, family_name, formatted_name,
    primary_email_type, other_emails, employee_number, department, manager_id)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
  ON CONFLICT (user_id) DO UPDATE SET external_id = excluded.external_id,
    given_name = excluded.given_name, family_name = excluded.family_name,
    formatted_name = excluded.formatted_name, primary_email_type = excluded.primary_email_type,
    other_emails = excluded.other_emails, employee_number = excluded.employee_number,
    department = excluded.department, manager_id = excluded.manager_id`

const writesOf = (q: SQL): ScimProfileWrites => ({
  async put(userId, profile) {
    await q.unsafe(UPSERT, [userId, ...profileValues(profile)])
  },
  async putGroupExternalId(groupId, externalId) {
    // The row stays with a null externalId: it also says the group is SCIM's (section 17).
    await q`INSERT INTO group_profiles (group_id, external_id) VALUES (${groupId}, ${externalId})
      ON CONFLICT (group_id) DO UPDATE SET external_id = excluded.external_id`
  },
})

/** SCIM profiles on PostgreSQL: a list is one statement (its page and total one snapshot). */
export function createPgScimRows(pool: SQL): ScimProfileRows & {
  inUnit(tx: SQL): ScimProfileWrites
} {
  return {
    inUnit: writesOf,
    async listGroups(query: ScimGroupQuery) {
      const params: (string | number | boolean)[] = []
      const where = conditionSql(query.where, pgDialect(params))
      const limit = `$${params.length + 1}`
      const offset = `$${params.length + 2}`
      const members = query.withMembers
        ? `coalesce((SELECT json_agg(m.user_id ORDER BY m.user_id) FROM group_members m WHERE m.group_id = g.id), '[]'::json)`
        : `'[]'::json`
      const rows = await pool.unsafe<
        (Stored<GroupRecord> & { total: string; external_id: string | null })[]
      >(
        `WITH counted AS (SELECT count(*) AS total FROM ${GROUPS_FROM} WHERE ${where})
         SELECT page.*, counted.total FROM counted LEFT JOIN LATERAL (
           SELECT g.id, g.name, g.description, g.version, g.created_at, g.updated_at, ${members} AS members,
             gp.external_id
           FROM ${GROUPS_FROM} WHERE ${where}
           ORDER BY ${orderBySql(query.sortBy, query.descending)} LIMIT ${limit}::int8 OFFSET ${offset}::int8
         ) page ON true`,
        [...params, query.count, query.offset],
      )
      const total = Number(rows[0]?.total ?? 0)
      const found = rows
        .filter((row) => row.id !== null)
        .map(({ total: _, external_id: externalId, ...row }) => ({
          group: withIsoTimestamps<GroupRecord>(row),
          externalId,
        }))
      return { total, rows: found }
    },
    async groupExternalIds(ids) {
      const rows = await pool.unsafe<{ group_id: number; external_id: string | null }[]>(
        'SELECT group_id, external_id FROM group_profiles WHERE group_id = ANY($1::int4[])',
        [`{${ids.map(Number).join(',')}}`],
      )
      return new Map(rows.map((row) => [row.group_id, row.external_id]))
    },
    async namesOf(ids) {
      const rows = await pool.unsafe<{ id: number; name: string }[]>(
        'SELECT id, name FROM users WHERE id = ANY($1::int4[])',
        [`{${ids.map(Number).join(',')}}`],
      )
      return new Map(rows.map((row) => [row.id, row.name]))
    },
    async profilesOf(ids) {
      const rows = await pool.unsafe<(ProfileRow & { user_id: number })[]>(
        `SELECT p.user_id, ${PROFILE_COLUMNS} FROM user_profiles p WHERE p.user_id = ANY($1::int4[])`,
        [`{${ids.map(Number).join(',')}}`],
      )
      const found = new Map<number, ScimProfile>()
      for (const row of rows) found.set(row.user_id, profileOf(row))
      return found
    },
    async listUsers(query: ScimUserQuery) {
      const params: (string | number | boolean)[] = []
      const where = conditionSql(query.where, pgDialect(params))
      const limit = `$${params.length + 1}`
      const offset = `$${params.length + 2}`
      const rows = await pool.unsafe<Row[]>(
        `WITH counted AS (SELECT count(*) AS total FROM ${FROM} WHERE ${where})
         SELECT page.*, counted.total FROM counted LEFT JOIN LATERAL (
           SELECT ${USER_COLUMNS}, ${PROFILE_COLUMNS} FROM ${FROM} WHERE ${where}
           ORDER BY ${orderBySql(query.sortBy, query.descending)} LIMIT ${limit}::int8 OFFSET ${offset}::int8
         ) page ON true`,
        [...params, query.count, query.offset],
      )
      const total = Number(rows[0]?.total ?? 0)
      return { total, rows: rows.filter((row) => row.id !== null).map(rowOf) }
    },
  }
}

function rowOf(row: Row): ScimUserRow {
  const user: UserRecord = {
    id: row.id,
    name: row.name,
    email: row.email,
    username: row.username,
    active: row.active,
    created_at: (row.created_at as Date).toISOString(),
    updated_at: row.updated_at.toISOString(),
    role: row.role,
    email_verified_at: row.email_verified_at,
    version: row.version,
    groups: row.groups,
  }
  return { user, profile: profileOf(row) }
}
