import type { SQL } from 'bun'
import { directionOf } from '../../db/page'
import { checkGroupGuard, type GroupRecord, groupNameKey } from '../../groups/records'
import type {
  GroupRows,
  GroupWriteRows,
  MembershipOutcome,
  MembershipWrites,
} from '../../groups/store'
import { neutralUnique } from './errors'
import { type Stored, withIsoTimestamps } from './timestamps'

// A group with its members (user ids, in order) in one statement; json_agg, as Bun.SQL hands an
// int[] over as an Int32Array, which JSON.stringify does not write as a list.
const COLUMNS = `id, name, description, version, created_at, updated_at,
  coalesce((SELECT json_agg(m.user_id ORDER BY m.user_id) FROM group_members m
            WHERE m.group_id = groups.id), '[]'::json) AS members`

const record = (row: Stored<GroupRecord>): GroupRecord => withIsoTimestamps<GroupRecord>(row)

/**
 * The groups' writes on PostgreSQL over `q`: the pool (each its own transaction) or a unit of
 * work's transaction. Several instances write at once: a write locks the group row (FOR
 * UPDATE) before it checks the guard; a membership locks the user, then the group, the order a
 * user's deletion takes them in, so two never wait on each other.
 */
function createPgGroupWriteRows(
  q: SQL,
  inTransaction: <T>(work: (tx: SQL) => Promise<T>) => Promise<T>,
): GroupWriteRows & MembershipWrites {
  async function locked(tx: SQL, id: number): Promise<GroupRecord | null> {
    const [row] = await tx.unsafe<Stored<GroupRecord>[]>(
      `SELECT ${COLUMNS} FROM groups WHERE id = $1::int8 FOR UPDATE`,
      [id],
    )
    return row === undefined ? null : record(row)
  }

  const membership = (groupId: number, userId: number, at: string, adding: boolean) =>
    inTransaction(async (tx): Promise<MembershipOutcome> => {
      // The user's row first, then the group's: a user's deletion locks in that order too
      // (its row, then the groups it leaves), so the two never wait on each other.
      const [user] = await tx`SELECT 1 FROM users WHERE id = ${userId}::int8 FOR UPDATE`
      if ((await locked(tx, groupId)) === null) return 'no-group'
      if (user === undefined) return adding ? 'no-user' : 'unchanged'
      const result = adding
        ? await tx`INSERT INTO group_members (group_id, user_id) VALUES (${groupId}, ${userId})
                   ON CONFLICT DO NOTHING`
        : await tx`DELETE FROM group_members WHERE group_id = ${groupId} AND user_id = ${userId}`
      if (result.count === 0) return 'unchanged'
      await tx`UPDATE groups SET version = version + 1, updated_at = ${at} WHERE id = ${groupId}`
      await tx`UPDATE users SET version = version + 1, updated_at = ${at} WHERE id = ${userId}`
      return 'changed'
    })

  return {
    async insert(group, at) {
      const [row] = await neutralUnique(
        q<Stored<GroupRecord>[]>`
          INSERT INTO groups (name, name_key, description, created_at, updated_at)
          VALUES (${group.name.trim()}, ${groupNameKey(group.name)}, ${group.description}, ${at}, ${at})
          RETURNING id, name, description, version, created_at, updated_at, '[]'::json AS members`,
      )
      return record(row as Stored<GroupRecord>)
    },

    update(id, changes, guard, at) {
      return inTransaction(async (tx) => {
        const before = checkGroupGuard(await locked(tx, id), guard)
        const name = changes.name?.trim() ?? null
        const keep = changes.description === undefined
        const [row] = await neutralUnique(
          tx.unsafe<Stored<GroupRecord>[]>(
            `UPDATE groups SET
               name = coalesce($1::text, name),
               name_key = coalesce($2::text, name_key),
               description = CASE WHEN $3::boolean THEN description ELSE $4::text END,
               version = version + 1,
               updated_at = $5
             WHERE id = $6::int8
             RETURNING ${COLUMNS}`,
            [
              name,
              name === null ? null : groupNameKey(name),
              keep,
              changes.description ?? null,
              at,
              id,
            ],
          ),
        )
        return { before, after: record(row as Stored<GroupRecord>) }
      })
    },

    remove(id, guard) {
      return inTransaction(async (tx) => {
        const removed = checkGroupGuard(await locked(tx, id), guard)
        await tx`DELETE FROM groups WHERE id = ${id}::int8`
        return removed
      })
    },

    addMember: (groupId, userId, at) => membership(groupId, userId, at, true),
    removeMember: (groupId, userId, at) => membership(groupId, userId, at, false),

    async leaveAll(userId, at) {
      // One round trip: the memberships go, and the groups they were in move their versions.
      await q`
        WITH gone AS (DELETE FROM group_members WHERE user_id = ${userId} RETURNING group_id)
        UPDATE groups SET version = version + 1, updated_at = ${at}
        WHERE id IN (SELECT group_id FROM gone)`
    },
  }
}

/** Groups in PostgreSQL: the writes above over the pool, and the reads. */
export function createPgGroupRows(pool: SQL): GroupRows & {
  /** The writes as a unit of work's transaction sees them. */
  inUnit(tx: SQL): GroupWriteRows & MembershipWrites
} {
  const { leaveAll: _, ...writes } = createPgGroupWriteRows(pool, (work) => pool.begin(work))
  return {
    ...writes,
    inUnit: (tx) => createPgGroupWriteRows(tx, (work) => work(tx)),

    async get(id) {
      const [row] = await pool.unsafe<Stored<GroupRecord>[]>(
        `SELECT ${COLUMNS} FROM groups WHERE id = $1::int8`,
        [id],
      )
      return row === undefined ? null : record(row)
    },

    async page(request) {
      // One snapshot for the page and its total.
      return await pool.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        const rows = await tx.unsafe<Stored<GroupRecord>[]>(
          `SELECT ${COLUMNS} FROM groups ORDER BY id ${directionOf(request, 'oldest')} LIMIT $1 OFFSET $2`,
          [request.limit, request.offset],
        )
        const [count] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM groups`
        return { data: rows.map(record), total: count?.n ?? 0 }
      })
    },
  }
}
