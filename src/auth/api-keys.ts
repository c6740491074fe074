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
}

export interface CreatedApiKey {
  id: number
  name: string
  prefix: string
  key: string
  created_at: string
}

/** API keys: created once (the key is shown only then), stored as SHA-256, revocable at once. */
export interface ApiKeyStore {
  create(name: string): Promise<CreatedApiKey>
  /** The active keys, oldest first. */
  list(request: PageRequest): Promise<{ data: ApiKeyView[]; total: number }>
  /** True when an active key was revoked; false when there was none with that id. */
  revoke(id: number): Promise<boolean>
  /** The key's id and name if it is valid and not revoked; records when it was last used. */
  authenticate(key: string): Promise<{ id: number; name: string } | null>
}
