import type { PageRequest } from '../db/page'
import { looksLikeSecret, newSecret, sha256Hex } from './tokens'

export const API_KEY_PREFIX = 'rk_'
/** How much of a key is kept in the clear, to tell keys apart in lists. */
export const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8
/** last_used_at is written at most this often per key (a write per request would cost an fsync). */
export const LAST_USED_RESOLUTION_MS = 60_000

export interface ApiKeyView {
  id: number
  name: string
  prefix: string
  created_at: string
  last_used_at: string | null
  /** The key that made this one through the API; null when made on the command line. */
  parent_id: number | null
}

export interface CreatedApiKey {
  id: number
  name: string
  prefix: string
  key: string
  created_at: string
}

/**
 * API keys: created once (the key is shown only then), stored as SHA-256, revocable at once. A
 * key made with a key records it as its parent, and dies with it.
 */
export interface ApiKeyStore {
  /** A new key; `parentId` is the key that asked for it (none from the command line). */
  create(name: string, parentId?: number | null): Promise<CreatedApiKey>
  /** The active keys, oldest first. */
  list(request: PageRequest): Promise<{ data: ApiKeyView[]; total: number }>
  /**
   * Revokes an active key and every active key made from it, at any depth, in one write. True
   * when the key was active; false when there was none with that id.
   */
  revoke(id: number): Promise<boolean>
  /** The key's id and name if it is valid and not revoked; records when it was last used. */
  authenticate(key: string): Promise<{ id: number; name: string } | null>
}

export interface NewApiKeyRow {
  name: string
  prefix: string
  keyHash: string
  createdAt: string
  parentId: number | null
}

/** What a database keeps of API keys: row operations only (every rule is ApiKeyStore's). */
export interface ApiKeyRows {
  insert(row: NewApiKeyRow): Promise<ApiKeyView>
  /** The active (not revoked) key with this hash. */
  findActive(
    keyHash: string,
  ): Promise<{ id: number; name: string; last_used_at: string | null } | null>
  /** Records a use; nobody waits for it. */
  touch(id: number, at: string): Promise<void>
  /** Active keys in id order, and how many there are. */
  page(request: PageRequest): Promise<{ data: ApiKeyView[]; total: number }>
  /**
   * Revokes the key and its descendants (KEY_FAMILY) in one statement; true when the key itself
   * was active.
   */
  revokeFamily(id: number, at: string): Promise<boolean>
}

/** The keys revoked with `id`: it and every key made from it, at any depth (both databases). */
export const KEY_FAMILY = `WITH RECURSIVE family(id) AS (
  SELECT id FROM api_keys WHERE id = $1
  UNION SELECT k.id FROM api_keys k JOIN family f ON k.parent_id = f.id
)`

/** The rules of API keys over a database's rows. */
export function createApiKeyStore(rows: ApiKeyRows, now: () => Date): ApiKeyStore {
  return {
    async create(name, parentId = null) {
      const key = newSecret(API_KEY_PREFIX)
      const row = await rows.insert({
        name,
        prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
        keyHash: sha256Hex(key),
        createdAt: now().toISOString(),
        parentId,
      })
      return { id: row.id, name: row.name, prefix: row.prefix, key, created_at: row.created_at }
    },

    list: (request) => rows.page(request),

    revoke: (id) => rows.revokeFamily(id, now().toISOString()),

    async authenticate(key) {
      if (!looksLikeSecret(key, API_KEY_PREFIX)) return null
      const row = await rows.findActive(sha256Hex(key))
      if (row === null) return null
      const at = now()
      const last = row.last_used_at === null ? 0 : Date.parse(row.last_used_at)
      if (at.getTime() - last >= LAST_USED_RESOLUTION_MS) {
        // Not awaited: the request does not wait for a bookkeeping write.
        rows.touch(row.id, at.toISOString()).catch(() => {})
      }
      return { id: row.id, name: row.name }
    },
  }
}
