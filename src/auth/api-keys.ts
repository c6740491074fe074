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
  /**
   * The user whose session or token made this key (or its first ancestor): the key works only
   * while that user is an active admin. null: made on the command line or by a key of its own.
   */
  created_by_user: number | null
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
  created_by_user: number | null
  scopes: Grant[]
  expires_at: string | null
}

/** What a new key is made with. */
export interface NewApiKey {
  name: string
  /** The key that asked for it (none from the command line or a signed-in admin). */
  parentId?: number | null
  /** The user whose credential asked for it, directly or through its ancestors (section 17). */
  createdByUser?: number | null
  scopes: readonly Grant[]
  /** ISO time; null or absent: the key does not expire. */
  expiresAt?: string | null
}

/** The caller a valid key stands for. */
export interface KeyHolder {
  id: number
  name: string
  scopes: readonly Grant[]
  /** When it stops working (a key it makes expires no later); null: never. */
  expiresAt: string | null
  /** The admin whose credential made it (or its first ancestor); null: none. */
  createdByUser: number | null
}

/** A key as its revocation judges it: what it holds, who made it, and the keys above it. */
export interface RevocableKey {
  id: number
  scopes: Grant[]
  createdByUser: number | null
  /** The key that made it, the key that made that one, and so on. */
  ancestors: number[]
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
   * when the key was active; false when there was none with that id. `refusal` judges the key
   * first (the caller's authority over it, section 17): what it returns is thrown, and nothing
   * is revoked.
   */
  revoke(
    id: number,
    by: AuditSource,
    refusal?: (key: RevocableKey) => Error | undefined,
  ): Promise<boolean>
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
  createdByUser: number | null
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
  /** The active key with this id: its scopes, its user and its ancestors' ids; null if none. */
  describe(id: number): Promise<{
    scopes: string
    created_by_user: number | null
    ancestors: number[]
  } | null>
}

/** What a database keeps of API keys: row operations only (every rule is ApiKeyStore's). */
export interface ApiKeyRows extends ApiKeyWriteRows {
  /**
   * The key with this hash, unless revoked (an expired one too: expiry is the store's rule),
   * with whether its user is an active admin, read in the same statement.
   */
  findActive(keyHash: string): Promise<ActiveKeyRow | null>
  /** Records a use; nobody waits for it. */
  touch(id: number, at: string): Promise<void>
  /** Active keys in id order, and how many there are. */
  page(request: ListRequest): Promise<{ data: ApiKeyRow[]; total: number }>
}

/** A key as authentication reads it, with the user that made it. */
export interface ActiveKeyRow {
  id: number
  name: string
  last_used_at: string | null
  scopes: string
  expires_at: string | null
  created_by_user: number | null
  /** Whether `created_by_user` is an active admin now (false when there is none). */
  creator_is_admin: boolean | number
}

/** The keys above `id`: the key that made it, and so on up (both databases; not `id` itself). */
export const KEY_ANCESTORS = `WITH RECURSIVE up(id, parent_id) AS (
  SELECT id, parent_id FROM api_keys WHERE id = $1
  UNION SELECT k.id, k.parent_id FROM api_keys k JOIN up ON k.id = up.parent_id
)
SELECT id FROM up WHERE id <> $1`

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
        createdByUser: request.createdByUser ?? null,
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
        created_by_user: view.created_by_user,
        scopes: view.scopes,
        expires_at: view.expires_at,
      }
    },

    async revoke(id, by, refusal) {
      if (refusal !== undefined) {
        const key = await rows.apiKeys.describe(id)
        if (key === null) return false
        const refused = refusal({
          id,
          scopes: grantsOf(key.scopes),
          createdByUser: key.created_by_user,
          ancestors: key.ancestors,
        })
        if (refused !== undefined) throw refused
      }
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
    revoke: (id, by, refusal) => transaction((tx) => tx.apiKeys.revoke(id, by, refusal)),

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
      // A key an admin's credential made holds no more than that user (section 17): it stops
      // working once the user is demoted, deactivated or deleted.
      if (row.created_by_user !== null && !isActiveAdmin(row)) return null
      const last = row.last_used_at === null ? 0 : Date.parse(row.last_used_at)
      if (at.getTime() - last >= LAST_USED_RESOLUTION_MS) {
        // Not awaited: the request does not wait for a bookkeeping write.
        rows.touch(row.id, at.toISOString()).catch(() => {})
      }
      return {
        id: row.id,
        name: row.name,
        scopes: grantsOf(row.scopes),
        expiresAt: row.expires_at,
        createdByUser: row.created_by_user,
      }
    },
  }
}

function isActiveAdmin(row: ActiveKeyRow): boolean {
  return Boolean(row.creator_is_admin)
}

function viewOf(row: ApiKeyRow): ApiKeyView {
  return { ...row, scopes: grantsOf(row.scopes) }
}
