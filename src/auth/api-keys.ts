import type { PageRequest } from '../db/page'

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

/** The keys revoked with `id`: it and every key made from it, at any depth (both databases). */
export const KEY_FAMILY = `WITH RECURSIVE family(id) AS (
  SELECT id FROM api_keys WHERE id = $1
  UNION SELECT k.id FROM api_keys k JOIN family f ON k.parent_id = f.id
)`
