import type { SQL } from 'bun'
import { type ApiKeyRow, type ApiKeyRows, KEY_FAMILY } from '../../auth/api-keys'
import { pageOf, type WithTotal } from './page'

/** API keys in PostgreSQL: a revocation on one instance holds on all at once. */
export function createPgApiKeyRows(pool: SQL): ApiKeyRows {
  return {
    async insert(row) {
      const [created] = await pool<ApiKeyRow[]>`
        INSERT INTO api_keys (name, prefix, key_hash, created_at, parent_id, scopes, expires_at)
        VALUES (${row.name}, ${row.prefix}, ${row.keyHash}, ${row.createdAt}, ${row.parentId},
                ${row.scopes}, ${row.expiresAt})
        RETURNING id, name, prefix, created_at, last_used_at, parent_id, scopes, expires_at`
      return created as ApiKeyRow
    },
    async findActive(keyHash) {
      const [row] = await pool<
        {
          id: number
          name: string
          last_used_at: string | null
          scopes: string
          expires_at: string | null
        }[]
      >`
        SELECT id, name, last_used_at, scopes, expires_at FROM api_keys
        WHERE key_hash = ${keyHash} AND revoked_at IS NULL`
      return row ?? null
    },
    async touch(id, at) {
      await pool`UPDATE api_keys SET last_used_at = ${at} WHERE id = ${id}`
    },
    async page(request) {
      return pageOf(
        await pool<WithTotal<ApiKeyRow>[]>`
          SELECT id, name, prefix, created_at, last_used_at, parent_id, scopes, expires_at,
                 (count(*) OVER ())::int AS total
          FROM api_keys WHERE revoked_at IS NULL
          ORDER BY id LIMIT ${request.limit} OFFSET ${request.offset}`,
        () => pool`SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL`,
      )
    },
    async revokeFamily(id, at) {
      // One statement: the key and its descendants go together, whatever runs beside it.
      const rows = await pool.unsafe<{ id: number }[]>(
        `${KEY_FAMILY}
         UPDATE api_keys SET revoked_at = $2
         WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL RETURNING id`,
        [id, at],
      )
      return rows.some((row) => row.id === id)
    },
  }
}
