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
import type { Store } from './connection'
import { settle } from './settle'

/** API keys in SQLite (see ApiKeyStore). */
export function createSqliteApiKeyStore(store: Store, now: () => Date): ApiKeyStore {
  const sqlite = store.db.$client
  const { reader, writes } = store
  const columns = 'id, name, prefix, created_at, last_used_at, parent_id'
  const insert = sqlite.query<ApiKeyView, [string, string, string, string, number | null]>(
    `INSERT INTO api_keys (name, prefix, key_hash, created_at, parent_id) VALUES (?, ?, ?, ?, ?) RETURNING ${columns}`,
  )
  const byHash = reader.query<{ id: number; name: string; last_used_at: string | null }, [string]>(
    'SELECT id, name, last_used_at FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL',
  )
  const touch = sqlite.query('UPDATE api_keys SET last_used_at = ? WHERE id = ?')
  const page = reader.query<ApiKeyView, [number, number]>(
    `SELECT ${columns} FROM api_keys WHERE revoked_at IS NULL ORDER BY id LIMIT ? OFFSET ?`,
  )
  const total = reader.query<{ n: number }, []>(
    'SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL',
  )
  const isActive = sqlite.query<{ found: number }, [number]>(
    'SELECT 1 AS found FROM api_keys WHERE id = ? AND revoked_at IS NULL',
  )
  const revokeFamily = sqlite.query(
    `${KEY_FAMILY.replaceAll('$1', '?1')}
     UPDATE api_keys SET revoked_at = ?2 WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL`,
  )
  const readPage = reader.transaction((request: PageRequest) => ({
    data: page.all(request.limit, request.offset),
    total: total.get()?.n ?? 0,
  }))

  return {
    async create(name: string, parentId: number | null = null): Promise<CreatedApiKey> {
      const key = newSecret(API_KEY_PREFIX)
      const row = (await writes.run(() =>
        insert.get(
          name,
          key.slice(0, SHOWN_PREFIX_LENGTH),
          sha256Hex(key),
          now().toISOString(),
          parentId,
        ),
      )) as ApiKeyView
      return { id: row.id, name: row.name, prefix: row.prefix, key, created_at: row.created_at }
    },

    list: (request) => settle(() => readPage(request)),

    async revoke(id: number): Promise<boolean> {
      return await writes.run(() => {
        if (isActive.get(id) === null) return false
        revokeFamily.run(id, now().toISOString())
        return true
      })
    },

    authenticate: (key) =>
      settle(() => {
        if (!looksLikeSecret(key, API_KEY_PREFIX)) return null
        const row = byHash.get(sha256Hex(key))
        if (row === null) return null
        const at = now()
        const last = row.last_used_at === null ? 0 : Date.parse(row.last_used_at)
        if (at.getTime() - last >= LAST_USED_RESOLUTION_MS) {
          writes.defer(() => touch.run(at.toISOString(), row.id))
        }
        return { id: row.id, name: row.name }
      }),
  }
}
