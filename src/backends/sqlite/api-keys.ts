import {
  type ActiveKeyRow,
  type ApiKeyRow,
  type ApiKeyRows,
  type ApiKeyWriteRows,
  KEY_ANCESTORS,
  KEY_FAMILY,
  type NewApiKeyRow,
} from '../../auth/api-keys'
import { bothWays, directionOf, type ListRequest } from '../../db/page'
import type { Store } from './connection'
import { settle } from './settle'

/** API keys in SQLite: reads on the reader, writes through the group commit (or a unit's). */
export function createSqliteApiKeyRows(store: Store): ApiKeyRows & {
  readonly inUnit: ApiKeyWriteRows
} {
  const sqlite = store.db.$client
  const { reader, writes } = store
  const columns =
    'id, name, prefix, created_at, last_used_at, parent_id, created_by_user, scopes, expires_at'
  const insert = sqlite.query<
    ApiKeyRow,
    [string, string, string, string, number | null, number | null, string, string | null]
  >(
    `INSERT INTO api_keys
       (name, prefix, key_hash, created_at, parent_id, created_by_user, scopes, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${columns}`,
  )
  // The key and whether the user that made it is an active admin, in one statement (an
  // EXISTS: a LEFT JOIN of users made SQLite's lookup of a key 6x dearer, 1 µs → 7 µs).
  const byHash = reader.query<ActiveKeyRow, [string]>(
    `SELECT k.id, k.name, k.last_used_at, k.scopes, k.expires_at, k.created_by_user,
            EXISTS (SELECT 1 FROM users u WHERE u.id = k.created_by_user AND u.role = 'admin'
                      AND u.active) AS creator_is_admin
     FROM api_keys k
     WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
  )
  const describe = sqlite.query<{ scopes: string; created_by_user: number | null }, [number]>(
    'SELECT scopes, created_by_user FROM api_keys WHERE id = ? AND revoked_at IS NULL',
  )
  const ancestors = sqlite.query<{ id: number }, [number]>(KEY_ANCESTORS.replaceAll('$1', '?1'))
  const touch = sqlite.query('UPDATE api_keys SET last_used_at = ? WHERE id = ?')
  const page = bothWays((direction) =>
    reader.query<ApiKeyRow, [number, number]>(
      `SELECT ${columns} FROM api_keys WHERE revoked_at IS NULL ORDER BY id ${direction} LIMIT ? OFFSET ?`,
    ),
  )
  const total = reader.query<{ n: number }, []>(
    'SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL',
  )
  const isActive = sqlite.query<{ found: number }, [number]>(
    'SELECT 1 AS found FROM api_keys WHERE id = ? AND revoked_at IS NULL',
  )
  const revokeFamily = sqlite.query(
    `${KEY_FAMILY.replaceAll('$1', '?1')}
     UPDATE api_keys SET revoked_at = ?2 WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL
     RETURNING id`,
  )
  const readPage = store.snapshot((request: ListRequest) => ({
    data: page[directionOf(request, 'oldest')].all(request.limit, request.offset),
    total: total.get()?.n ?? 0,
  }))

  /** The writes, synchronous, for work already inside a group transaction (see WriteQueue). */
  const inWrite = {
    insert: (row: NewApiKeyRow) =>
      insert.get(
        row.name,
        row.prefix,
        row.keyHash,
        row.createdAt,
        row.parentId,
        row.createdByUser,
        row.scopes,
        row.expiresAt,
      ) as ApiKeyRow,
    describe(id: number) {
      const key = describe.get(id)
      if (key === null) return null
      return { ...key, ancestors: ancestors.all(id).map((row) => row.id) }
    },
    revokeFamily(id: number, at: string): number[] {
      if (isActive.get(id) === null) return []
      return (revokeFamily.all(id, at) as { id: number }[])
        .map((row) => row.id)
        .sort((a, b) => a - b)
    },
  }

  return {
    inUnit: {
      insert: (row) => settle(() => inWrite.insert(row)),
      revokeFamily: (id, at) => settle(() => inWrite.revokeFamily(id, at)),
      describe: (id) => settle(() => inWrite.describe(id)),
    },
    describe: (id) => writes.run(() => inWrite.describe(id)),
    insert: (row) => writes.run(() => inWrite.insert(row)),
    findActive: (keyHash) => settle(() => byHash.get(keyHash)),
    async touch(id, at) {
      await writes.run(() => touch.run(at, id))
    },
    page: (request) => settle(() => readPage(request)),
    revokeFamily: (id, at) => writes.run(() => inWrite.revokeFamily(id, at)),
  }
}
