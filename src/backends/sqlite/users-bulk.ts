import { Database, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { groupNameKey } from '../../groups/records'
import {
  type ExportedUser,
  emailKey,
  type ImportedUser,
  type TransferredProfile,
  usernameKey,
} from '../../users/records'
import { searchKeyOf } from '../../users/search-key'
import type { UserRows } from '../../users/store'
import type { Store } from './connection'
import { isUniqueViolation } from './errors'
import { settle } from './settle'

/** Users per batch of an export. */
const EXPORT_BATCH = 500

const ROLLBACK = Symbol('rollback')

type BulkPart = Pick<UserRows, 'emailKeysTaken' | 'exportAll' | 'insertMany'>

// Groups by name in code-point order (BINARY compares UTF-8 bytes): the order is the same on
// every database, whatever ids the groups got there.
const EXPORT_SQL = `SELECT u.id, u.name, u.email, coalesce(u.username, u.email) AS username,
    u.active, u.role, u.email_verified_at, u.created_at, u.updated_at,
    (SELECT json_group_array(name) FROM (SELECT g.name FROM group_members m
       JOIN groups g ON g.id = m.group_id WHERE m.user_id = u.id ORDER BY g.name)) AS groups,
    p.user_id IS NOT NULL AS provisioned, p.external_id, p.given_name, p.family_name,
    p.formatted_name, p.primary_email_type, p.other_emails, p.employee_number, p.department,
    p.manager_id, u.password_hash
  FROM users u LEFT JOIN user_profiles p ON p.user_id = u.id ORDER BY u.id`

/** A row of EXPORT_SQL: SQLite's 0 and 1 for booleans, JSON text for lists. */
type ExportRow = Omit<ExportedUser, 'active' | 'groups' | 'scim'> &
  Omit<TransferredProfile, 'other_emails'> & {
    active: number
    groups: string
    provisioned: number
    other_emails: string | null
  }

function exportedUser(row: ExportRow): ExportedUser {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    username: row.username,
    active: row.active === 1,
    role: row.role,
    email_verified_at: row.email_verified_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    groups: JSON.parse(row.groups) as string[],
    scim: row.provisioned === 1 ? profileOf(row) : null,
    password_hash: row.password_hash,
  }
}

function profileOf(row: ExportRow): TransferredProfile {
  return {
    external_id: row.external_id,
    given_name: row.given_name,
    family_name: row.family_name,
    formatted_name: row.formatted_name,
    primary_email_type: row.primary_email_type,
    other_emails: JSON.parse(row.other_emails ?? '[]'),
    employee_number: row.employee_number,
    department: row.department,
    manager_id: row.manager_id,
  }
}

/**
 * Users in bulk, for import and export (the CLI's, and GET /users/export): statements of their
 * own, off the per-request ones. Part of the SQLite users store.
 */
export function createSqliteUserBulk(store: Store, now: () => Date): BulkPart {
  const writer = store.db.$client
  const takenKeys = store.reader.query<{ email_key: string }, [string]>(
    // An address that is another user's username (other than its email) is taken too.
    `SELECT email_key FROM users WHERE email_key IN (SELECT value FROM json_each(?1))
     UNION SELECT username_key FROM users WHERE username_key IN (SELECT value FROM json_each(?1))
       AND username_key <> email_key`,
  )
  const insertUser = writer.query<never, SQLQueryBindings[]>(
    // A null id is the next one; AUTOINCREMENT's sequence moves past any id given.
    `INSERT INTO users (id, name, email, email_key, username, username_key, active, role,
       email_verified_at, password_hash, created_at, updated_at, search_key)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertProfile = writer.query(
    `INSERT INTO user_profiles (user_id, external_id, given_name, family_name, formatted_name,
       primary_email_type, other_emails, employee_number, department, manager_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const groupByKey = writer.query<{ id: number }, [string]>(
    'SELECT id FROM groups WHERE name_key = ?',
  )
  const insertGroup = writer.query<{ id: number }, [string, string, string]>(
    `INSERT INTO groups (name, name_key, description, created_at, updated_at)
     VALUES (?1, ?2, NULL, ?3, ?3) RETURNING id`,
  )
  const touchGroup = writer.query(
    'UPDATE groups SET version = version + 1, updated_at = ? WHERE id = ?',
  )
  const join = writer.query('INSERT INTO group_members (group_id, user_id) VALUES (?, ?)')
  // Alone (the CLI) this is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()

  return {
    emailKeysTaken: (keys) =>
      settle(() => {
        if (keys.length === 0) return new Set<string>()
        return new Set(takenKeys.all(JSON.stringify(keys)).map((row) => row.email_key))
      }),

    /**
     * Read on a connection of its own, inside one read transaction, so the export is one
     * consistent snapshot and requests that run while it streams neither wait for it nor see
     * its snapshot. Closed when the iteration ends or is abandoned (a client that went away).
     */
    async *exportAll(): AsyncGenerator<readonly ExportedUser[]> {
      const snapshot = new Database(store.reader.filename, { readonly: true, strict: true })
      try {
        snapshot.run('PRAGMA busy_timeout = 5000')
        snapshot.run('BEGIN')
        let batch: ExportedUser[] = []
        for (const row of snapshot.query<ExportRow, []>(EXPORT_SQL).iterate()) {
          batch.push(exportedUser(row))
          if (batch.length < EXPORT_BATCH) continue
          yield batch
          batch = []
        }
        if (batch.length > 0) yield batch
        snapshot.run('COMMIT')
      } finally {
        snapshot.close()
      }
    },

    insertMany: (rows: readonly ImportedUser[], options: { allOrNothing: boolean }) =>
      settle(() => {
        const conflicts: number[] = []
        let inserted = 0
        const at = now().toISOString()
        try {
          transaction(() => {
            const groups = new GroupsByName(groupByKey, insertGroup, at)
            rows.forEach((row, index) => {
              let id: number
              try {
                id = Number(insertUser.run(...userValues(row, at)).lastInsertRowid)
              } catch (error) {
                if (!isUniqueViolation(error)) throw error
                conflicts.push(index)
                return
              }
              inserted += 1
              if (row.scim != null) insertProfile.run(id, ...profileValues(row.scim))
              for (const name of row.groups ?? []) join.run(groups.idOf(name), id)
            })
            if (options.allOrNothing && conflicts.length > 0) throw ROLLBACK
            // A group that was there gained members: a new version, as a membership change gives.
            for (const groupId of groups.existing) touchGroup.run(at, groupId)
          })
        } catch (error) {
          if (error !== ROLLBACK) throw error
          inserted = 0
        }
        store.committedAlone()
        return { inserted, conflicts }
      }),
  }
}

/** An imported user's columns, in insertUser's order. */
function userValues(row: ImportedUser, at: string): SQLQueryBindings[] {
  const username = row.username ?? row.email
  return [
    row.id ?? null,
    row.name.trim(),
    row.email,
    emailKey(row.email),
    username,
    usernameKey(username),
    row.active === false ? 0 : 1,
    row.role ?? 'member',
    row.emailVerifiedAt ?? null,
    row.passwordHash,
    row.createdAt ?? at,
    row.updatedAt ?? at,
    searchKeyOf(row.name, row.email),
  ]
}

function profileValues(profile: TransferredProfile) {
  return [
    profile.external_id,
    profile.given_name,
    profile.family_name,
    profile.formatted_name,
    profile.primary_email_type,
    JSON.stringify(profile.other_emails),
    profile.employee_number,
    profile.department,
    profile.manager_id,
  ] as const
}

/** The groups an import puts users in, by name: found, or created on first use. */
class GroupsByName {
  private readonly ids = new Map<string, number>()
  /** The groups that were there before the import and gained members. */
  readonly existing = new Set<number>()

  constructor(
    private readonly byKey: Statement<{ id: number }, [string]>,
    private readonly insert: Statement<{ id: number }, [string, string, string]>,
    private readonly at: string,
  ) {}

  idOf(name: string): number {
    const key = groupNameKey(name)
    const known = this.ids.get(key)
    if (known !== undefined) return known
    const found = this.byKey.get(key)
    if (found !== null) this.existing.add(found.id)
    const id = found?.id ?? (this.insert.get(name.trim(), key, this.at) as { id: number }).id
    this.ids.set(key, id)
    return id
  }
}
