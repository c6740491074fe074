import type { SQL } from 'bun'
import {
  type ActiveKeyRow,
  type ApiKeyRow,
  type ApiKeyRows,
  type ApiKeyWriteRows,
  KEY_ANCESTORS,
  KEY_FAMILY,
} from '../../auth/api-keys'
import { directionOf } from '../../db/page'
import { pageOf, type WithTotal } from './page'

/** The keys' writes over `q`: the pool, or a unit of work's transaction. */
function createPgApiKeyWriteRows(q: SQL): ApiKeyWriteRows {
  return {
    async insert(row) {
      const [created] = await q<ApiKeyRow[]>`
        INSERT INTO api_keys
          (name, prefix, key_hash, created_at, parent_id, created_by_user, scopes, expires_at)
        VALUES (${row.name}, ${row.prefix}, ${row.keyHash}, ${row.createdAt}, ${row.parentId},
                ${row.createdByUser}, ${row.scopes}, ${row.expiresAt})
        RETURNING id, name, prefix, created_at, last_used_at, parent_id, created_by_user, scopes,
                  expires_at`
      return created as ApiKeyRow
    },
    async describe(id) {
      const [key] = await q<{ scopes: string; created_by_user: number | null }[]>`
        SELECT scopes, created_by_user FROM api_keys WHERE id = ${id} AND revoked_at IS NULL`
      if (key === undefined) return null
      const above = await q.unsafe<{ id: number }[]>(KEY_ANCESTORS, [id])
      return { ...key, ancestors: above.map((row) => row.id) }
    },
    async revokeFamily(id, at) {
      // One statement: the key and its descendants go together, whatever runs beside it.
      const rows = await q.unsafe<{ id: number }[]>(
        `${KEY_FAMILY}
         UPDATE api_keys SET revoked_at = $2
         WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL RETURNING id`,
        [id, at],
      )
      // The key's own revocation decides: a second revocation of it revokes nothing.
      if (!rows.some((row) => row.id === id)) return []
      return rows.map((row) => row.id).sort((a, b) => a - b)
    },
  }
}

/** API keys in PostgreSQL: a revocation on one instance holds on all at once. */
export function createPgApiKeyRows(pool: SQL): ApiKeyRows & {
  inUnit(tx: SQL): ApiKeyWriteRows
} {
  return {
    ...createPgApiKeyWriteRows(pool),
    inUnit: (tx) => createPgApiKeyWriteRows(tx),
    async findActive(keyHash) {
      // The key and whether the user that made it is an active admin, in one statement.
      const [row] = await pool<ActiveKeyRow[]>`
        SELECT k.id, k.name, k.last_used_at, k.scopes, k.expires_at, k.created_by_user,
               EXISTS (SELECT 1 FROM users u WHERE u.id = k.created_by_user AND u.role = 'admin'
                         AND u.active = true) AS creator_is_admin
        FROM api_keys k
        WHERE k.key_hash = ${keyHash} AND k.revoked_at IS NULL`
      return row ?? null
    },
    async touch(id, at) {
      await pool`UPDATE api_keys SET last_used_at = ${at} WHERE id = ${id}`
    },
    async page(request) {
      return pageOf(
        await pool.unsafe<WithTotal<ApiKeyRow>[]>(
          `SELECT id, name, prefix, created_at, last_used_at, parent_id, created_by_user, scopes,
                  expires_at, (count(*) OVER ())::int AS total
           FROM api_keys WHERE revoked_at IS NULL
           ORDER BY id ${directionOf(request, 'oldest')} LIMIT $1 OFFSET $2`,
          [request.limit, request.offset],
        ),
        () => pool`SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL`,
      )
    },
  }
}
