import type { Database, Statement } from 'bun:sqlite'
import { bothWays, directionOf, type ListRequest } from '../../db/page'
import {
  checkGroupGuard,
  type GroupChanges,
  type GroupGuard,
  type GroupRecord,
  groupNameKey,
  type NewGroup,
} from '../../groups/records'
import type {
  GroupRows,
  GroupWriteRows,
  MembershipOutcome,
  MembershipWrites,
} from '../../groups/store'
import type { Store } from './connection'
import { neutralUnique } from './errors'
import { settle } from './settle'

const COLUMNS = 'id, name, description, version, created_at, updated_at'

type GroupRow = Omit<GroupRecord, 'members'>

/**
 * The members of several groups (or the groups of several users) for one page. A page's ids
 * are close together, so one range read over the covering index does (3.6 µs here, where
 * `IN (SELECT value FROM json_each(?))` cost 12.7); ids spread wide (a filtered search over many
 * rows) are looked up by list instead, so the range never reads far more than the page holds.
 */
export function membersByOwner(
  db: Database,
  owner: 'group_id' | 'user_id',
): (ids: readonly number[]) => Map<number, number[]> {
  const other = owner === 'group_id' ? 'user_id' : 'group_id'
  const select = `SELECT ${owner} AS owner, ${other} AS other FROM group_members`
  const inRange = db.query<{ owner: number; other: number }, [number, number]>(
    `${select} WHERE ${owner} BETWEEN ? AND ? ORDER BY ${owner}, ${other}`,
  )
  const inList = db.query<{ owner: number; other: number }, [string]>(
    `${select} WHERE ${owner} IN (SELECT value FROM json_each(?)) ORDER BY ${owner}, ${other}`,
  )
  return (ids) => {
    const found = new Map<number, number[]>()
    if (ids.length === 0) return found
    const low = Math.min(...ids)
    const high = Math.max(...ids)
    const rows =
      high - low <= SPREAD * ids.length ? inRange.all(low, high) : inList.all(JSON.stringify(ids))
    for (const row of rows) {
      const list = found.get(row.owner)
      if (list === undefined) found.set(row.owner, [row.other])
      else list.push(row.other)
    }
    return found
  }
}

/** How far apart a page's ids may lie, per id, before they are looked up by list. */
const SPREAD = 50

/**
 * The members of one group (or the groups of one user), in id order, as `other`. Read as a
 * range of one id, not `owner = ?`: on the covering index SQLite answers the same rows in the
 * same order in 0.3 µs instead of 2.6 (measured in SQLite alone, inside a transaction).
 */
export function membersOfOne(
  db: Database,
  owner: 'group_id' | 'user_id',
): Statement<{ other: number }, [number]> {
  const other = owner === 'group_id' ? 'user_id' : 'group_id'
  return db.query<{ other: number }, [number]>(
    `SELECT ${other} AS other FROM group_members WHERE ${owner} BETWEEN ?1 AND ?1
     ORDER BY ${owner}, ${other}`,
  )
}

/**
 * Groups in SQLite: reads on the reader (committed rows), writes through the group commit;
 * `inUnit` holds the same writes for a unit of work, which already runs inside it.
 */
export function createSqliteGroupRows(store: Store): GroupRows & {
  readonly inUnit: GroupWriteRows & MembershipWrites
} {
  const writer = store.db.$client
  const { reader, writes } = store
  const insert = writer.query<GroupRow, [string, string, string | null, string, string]>(
    `INSERT INTO groups (name, name_key, description, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5) RETURNING ${COLUMNS}`,
  )
  const byId = (db: Database) =>
    db.query<GroupRow, [number]>(`SELECT ${COLUMNS} FROM groups WHERE id = ?`)
  const readById = byId(reader)
  const currentById = byId(writer)
  const readMembers = membersOfOne(reader, 'group_id')
  const currentMembers = membersOfOne(writer, 'group_id')
  const page = bothWays((direction) =>
    reader.query<GroupRow, [number, number]>(
      `SELECT ${COLUMNS} FROM groups ORDER BY id ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const total = reader.query<{ n: number }, []>('SELECT count(*) AS n FROM groups')
  const pageMembers = membersByOwner(reader, 'group_id')
  const update = writer.query<
    GroupRow,
    [string | null, string | null, number, string | null, string, number]
  >(
    `UPDATE groups SET name = coalesce(?1, name), name_key = coalesce(?2, name_key),
       description = CASE WHEN ?3 THEN ?4 ELSE description END,
       version = version + 1, updated_at = ?5
     WHERE id = ?6 RETURNING ${COLUMNS}`,
  )
  const remove = writer.query('DELETE FROM groups WHERE id = ?')
  const userExists = writer.query<{ found: number }, [number]>(
    'SELECT 1 AS found FROM users WHERE id = ?',
  )
  const join = writer.query('INSERT OR IGNORE INTO group_members (group_id, user_id) VALUES (?, ?)')
  const leave = writer.query('DELETE FROM group_members WHERE group_id = ? AND user_id = ?')
  const touchGroup = writer.query(
    'UPDATE groups SET version = version + 1, updated_at = ? WHERE id = ?',
  )
  const touchUser = writer.query(
    'UPDATE users SET version = version + 1, updated_at = ? WHERE id = ?',
  )
  const groupsOfUser = membersOfOne(writer, 'user_id')
  const leaveAll = writer.query('DELETE FROM group_members WHERE user_id = ?')
  // Nested in a group transaction this is a savepoint; alone (the CLI) it is BEGIN IMMEDIATE.
  const transaction = <T>(work: () => T): T => writer.transaction(work).immediate()
  const withMembers = (row: GroupRow, members: { other: number }[]): GroupRecord => ({
    ...row,
    members: members.map((member) => member.other),
  })
  const readPage = store.snapshot((request: ListRequest) => {
    const rows = page[directionOf(request, 'oldest')].all(request.limit, request.offset)
    const members = pageMembers(rows.map((row) => row.id))
    return {
      data: rows.map((row) => ({ ...row, members: members.get(row.id) ?? [] })),
      total: total.get()?.n ?? 0,
    }
  })
  const readOne = store.snapshot((id: number) => {
    const row = readById.get(id)
    return row === null ? null : withMembers(row, readMembers.all(id))
  })

  /** A membership write: both records move when it changes something. */
  const membership = (groupId: number, userId: number, at: string, adding: boolean) =>
    transaction((): MembershipOutcome => {
      if (currentById.get(groupId) === null) return 'no-group'
      if (adding && userExists.get(userId) === null) return 'no-user'
      const { changes } = adding ? join.run(groupId, userId) : leave.run(groupId, userId)
      if (changes === 0) return 'unchanged'
      touchGroup.run(at, groupId)
      touchUser.run(at, userId)
      return 'changed'
    })

  /** The writes, synchronous, for work already inside a group transaction (see WriteQueue). */
  const inWrite = {
    insert: (group: NewGroup, at: string): GroupRecord => ({
      ...(neutralUnique(() =>
        insert.get(group.name.trim(), groupNameKey(group.name), group.description, at, at),
      ) as GroupRow),
      members: [],
    }),
    update(
      id: number,
      changes: GroupChanges,
      guard: GroupGuard,
      at: string,
    ): { before: GroupRecord; after: GroupRecord } {
      return transaction(() => {
        const current = currentById.get(id)
        const before = checkGroupGuard(
          current && withMembers(current, currentMembers.all(id)),
          guard,
        )
        const name = changes.name?.trim() ?? null
        const row = neutralUnique(() =>
          update.get(
            name,
            name === null ? null : groupNameKey(name),
            changes.description === undefined ? 0 : 1,
            changes.description ?? null,
            at,
            id,
          ),
        ) as GroupRow
        return { before, after: withMembers(row, currentMembers.all(id)) }
      })
    },
    remove(id: number, guard: GroupGuard): GroupRecord {
      return transaction(() => {
        const current = currentById.get(id)
        const removed = checkGroupGuard(
          current && withMembers(current, currentMembers.all(id)),
          guard,
        )
        remove.run(id)
        return removed
      })
    },
  }

  return {
    inUnit: {
      insert: (group, at) => settle(() => inWrite.insert(group, at)),
      update: (id, changes, guard, at) => settle(() => inWrite.update(id, changes, guard, at)),
      remove: (id, guard) => settle(() => inWrite.remove(id, guard)),
      addMember: (groupId, userId, at) => settle(() => membership(groupId, userId, at, true)),
      removeMember: (groupId, userId, at) => settle(() => membership(groupId, userId, at, false)),
      leaveAll: (userId, at) =>
        settle(() => {
          // Most users being deleted are in no group: one read then, not an UPDATE whose
          // IN (subquery) builds a table (1.5-2 µs) and a DELETE that finds nothing.
          const groups = groupsOfUser.all(userId)
          if (groups.length === 0) return
          for (const group of groups) touchGroup.run(at, group.other)
          leaveAll.run(userId)
        }),
    },
    insert: (group, at) => writes.run(() => inWrite.insert(group, at)),
    update: (id, changes, guard, at) => writes.run(() => inWrite.update(id, changes, guard, at)),
    remove: (id, guard) => writes.run(() => inWrite.remove(id, guard)),
    addMember: (groupId, userId, at) => writes.run(() => membership(groupId, userId, at, true)),
    removeMember: (groupId, userId, at) => writes.run(() => membership(groupId, userId, at, false)),
    get: (id) => settle(() => readOne(id)),
    page: (request) => settle(() => readPage(request)),
  }
}
