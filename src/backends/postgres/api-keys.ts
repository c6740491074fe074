import type { SQL } from 'bun'
import {
  API_KEY_PREFIX,
  type ApiKeyStore,
  type ApiKeyView,
  type CreatedApiKey,
  KEY_FAMILY,
  LAST_USED_RESOLUTION_MS,
  SHOWN_PREFIX_LENGTH,
} from '../../auth/api-keys'
import { looksLikeSecret, newSecret, sha256Hex } from '../../auth/tokens'
import type { PageRequest } from '../../db/page'
import { pageOf, type WithTotal } from './page'

/** API keys in PostgreSQL (see ApiKeyStore): a revocation on one instance holds on all at once. */
export function createPgApiKeyStore(pool: SQL, now: () => Date): ApiKeyStore {
  return {
    async create(name: string, parentId: number | null = null): Promise<CreatedApiKey> {
      const key = newSecret(API_KEY_PREFIX)
      const [row] = await pool<ApiKeyView[]>`
        INSERT INTO api_keys (name, prefix, key_hash, created_at, parent_id)
        VALUES (${name}, ${key.slice(0, SHOWN_PREFIX_LENGTH)}, ${sha256Hex(key)},
                ${now().toISOString()}, ${parentId})
        RETURNING id, name, prefix, created_at`
      const created = row as ApiKeyView
      return {
        id: created.id,
        name: created.name,
        prefix: created.prefix,
        key,
        created_at: created.created_at,
      }
    },

    async list(request: PageRequest) {
      return pageOf(
        await pool<WithTotal<ApiKeyView>[]>`
          SELECT id, name, prefix, created_at, last_used_at, parent_id,
                 (count(*) OVER ())::int AS total
          FROM api_keys WHERE revoked_at IS NULL
          ORDER BY id LIMIT ${request.limit} OFFSET ${request.offset}`,
        () => pool`SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL`,
      )
    },

    async revoke(id: number): Promise<boolean> {
      // One statement: the key and its descendants go together, whatever runs beside it.
      const rows = await pool.unsafe<{ id: number }[]>(
        `${KEY_FAMILY}
         UPDATE api_keys SET revoked_at = $2
         WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL RETURNING id`,
        [id, now().toISOString()],
      )
      return rows.some((row) => row.id === id)
    },

    async authenticate(key: string) {
      if (!looksLikeSecret(key, API_KEY_PREFIX)) return null
      const [row] = await pool<{ id: number; name: string; last_used_at: string | null }[]>`
        SELECT id, name, last_used_at FROM api_keys
        WHERE key_hash = ${sha256Hex(key)} AND revoked_at IS NULL`
      if (row === undefined) return null
      const at = now()
      const last = row.last_used_at === null ? 0 : Date.parse(row.last_used_at)
      if (at.getTime() - last >= LAST_USED_RESOLUTION_MS) {
        // Not awaited: the request does not wait for a bookkeeping write.
        pool`UPDATE api_keys SET last_used_at = ${at.toISOString()} WHERE id = ${row.id}`.catch(
          () => {},
        )
      }
      return { id: row.id, name: row.name }
    },
  }
}
