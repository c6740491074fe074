import { type AuditSource, changedFields } from '../audit/events'
import type { AuditWrites } from '../audit/log'
import type { ListRequest } from '../db/page'
import type { Transaction } from '../db/unit'
import { type Grant, grantsOf, grantsText } from './access'
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
  /** `["*"]` (every scope) or the scopes, in the contract's order. */
  scopes: Grant[]
  /** When the key stops working; null: never. */
  expires_at: string | null
}

export interface CreatedApiKey {
  id: number
  name: string
  prefix: string
  key: string
  created_at: string
  parent_id: number | null
  scopes: Grant[]
  expires_at: string | null
}

/** What a new key is made with. */
export interface NewApiKey {
  name: string
  /** The key that asked for it (none from the command line or a signed-in admin). */
  parentId?: number | null
  scopes: readonly Grant[]
  /** ISO time; null or absent: the key does not expire. */
  expiresAt?: string | null
}

/** The caller a valid key stands for. */
export interface KeyHolder {
  id: number
  name: string
  scopes: readonly Grant[]
}

/**
 * API keys: created once (the key is shown only then), stored as SHA-256, revocable at once. A
 * key made with a key records it as its parent, and dies with it.
 */
export interface ApiKeyWrites {
  /** A new key; `parentId` is the key that asked for it (none from the command line). */
  create(key: NewApiKey, by: AuditSource): Promise<CreatedApiKey>
  /**
   * Revokes an active key and every active key made from it, at any depth, in one write. True
   * when the key was active; false when there was none with that id.
   */
  revoke(id: number, by: AuditSource): Promise<boolean>
}

export interface ApiKeyStore extends ApiKeyWrites {
  /** The active keys, oldest first. */
  list(request: ListRequest): Promise<{ data: ApiKeyView[]; total: number }>
  /**
   * The key's id, name and scopes if it is valid: not revoked, not expired. Records when it was
   * last used.
   */
  authenticate(key: string): Promise<KeyHolder | null>
}

export interface NewApiKeyRow {
  name: string
  prefix: string
  keyHash: string
  createdAt: string
  parentId: number | null
  /** Space-separated (grantsText). */
  scopes: string
  expiresAt: string | null
}

/** A key as a database lists it: scopes as stored text. */
export type ApiKeyRow = Omit<ApiKeyView, 'scopes'> & { scopes: string }

/** The keys' writes as a database does them, alone or inside a unit of work. */
export interface ApiKeyWriteRows {
  insert(row: NewApiKeyRow): Promise<ApiKeyRow>
  /**
   * Revokes the key and its descendants (KEY_FAMILY) in one statement, when the key itself is
   * active; the ids revoked (none when it was not).
   */
  revokeFamily(id: number, at: string): Promise<number[]>
}

/** What a database keeps of API keys: row operations only (every rule is ApiKeyStore's). */
export interface ApiKeyRows extends ApiKeyWriteRows {
  /** The key with this hash, unless revoked (an expired one too: expiry is the store's rule). */
  findActive(keyHash: string): Promise<{
    id: number
    name: string
    last_used_at: string | null
    scopes: string
    expires_at: string | null
  } | null>
  /** Records a use; nobody waits for it. */
  touch(id: number, at: string): Promise<void>
  /** Active keys in id order, and how many there are. */
  page(request: ListRequest): Promise<{ data: ApiKeyRow[]; total: number }>
}

/** The keys revoked with `id`: it and every key made from it, at any depth (both databases). */
export const KEY_FAMILY = `WITH RECURSIVE family(id) AS (
  SELECT id FROM api_keys WHERE id = $1
  UNION SELECT k.id FROM api_keys k JOIN family f ON k.parent_id = f.id
)`

const keyTarget = (id: number) => ({ type: 'api_key', id: String(id) })

/** The keys' writes over a unit of work's rows, each with its audit event. */
export function apiKeyWrites(
  rows: { apiKeys: ApiKeyWriteRows; audit: AuditWrites },
  now: () => Date,
): ApiKeyWrites {
  return {
    async create(request, by) {
      const key = newSecret(API_KEY_PREFIX)
      const row = await rows.apiKeys.insert({
        name: request.name,
        prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
        keyHash: sha256Hex(key),
        createdAt: now().toISOString(),
        parentId: request.parentId ?? null,
        scopes: grantsText(request.scopes),
        expiresAt: request.expiresAt ?? null,
      })
      const view = viewOf(row)
      const changes = changedFields(null, view, ['name', 'scopes', 'parent_id', 'expires_at'])
      await rows.audit.record(by, {
        action: 'api_key.created',
        target: keyTarget(view.id),
        changes,
      })
      return {
        id: view.id,
        name: view.name,
        prefix: view.prefix,
        key,
        created_at: view.created_at,
        parent_id: view.parent_id,
        scopes: view.scopes,
        expires_at: view.expires_at,
      }
    },

    async revoke(id, by) {
      const revoked = await rows.apiKeys.revokeFamily(id, now().toISOString())
      // One event per key: its descendants went with it (their parent names the cause).
      for (const gone of revoked) {
        await rows.audit.record(by, { action: 'api_key.revoked', target: keyTarget(gone) })
      }
      return revoked.includes(id)
    },
  }
}

/** The rules of API keys over a database's rows; every write a unit of work of its own. */
export function createApiKeyStore(
  rows: ApiKeyRows,
  transaction: Transaction<{ apiKeys: ApiKeyWrites }>,
  now: () => Date,
): ApiKeyStore {
  return {
    create: (request, by) => transaction((tx) => tx.apiKeys.create(request, by)),
    revoke: (id, by) => transaction((tx) => tx.apiKeys.revoke(id, by)),

    async list(request) {
      const page = await rows.page(request)
      return { data: page.data.map(viewOf), total: page.total }
    },

    async authenticate(key) {
      if (!looksLikeSecret(key, API_KEY_PREFIX)) return null
      const row = await rows.findActive(sha256Hex(key))
      if (row === null) return null
      const at = now()
      if (row.expires_at !== null && Date.parse(row.expires_at) <= at.getTime()) return null
      const last = row.last_used_at === null ? 0 : Date.parse(row.last_used_at)
      if (at.getTime() - last >= LAST_USED_RESOLUTION_MS) {
        // Not awaited: the request does not wait for a bookkeeping write.
        rows.touch(row.id, at.toISOString()).catch(() => {})
      }
      return { id: row.id, name: row.name, scopes: grantsOf(row.scopes) }
    },
  }
}

function viewOf(row: ApiKeyRow): ApiKeyView {
  return { ...row, scopes: grantsOf(row.scopes) }
}
