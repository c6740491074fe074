import { escapeDeceptive } from '../text'
import type { ErrorDetail } from './errors'

/** Fields whose values never appear in an error answer, whatever their shape. */
const SECRET_FIELDS = new Set([
  'password',
  'current_password',
  'pass',
  'secret',
  'token',
  'api_key',
  'key',
])

/** Stands for a secret's value in `received`: says nothing of it, not even its length. */
export const REDACTED = '[redacted]'

/**
 * A detail for one field: `received` is the value as text, `""` when it is absent, and
 * REDACTED for a secret (password, token, key and the like).
 */
export function fieldDetail(field: string, message: string, value?: unknown): ErrorDetail {
  if (value === undefined) return { field, message, received: '' }
  if (isSecretField(field)) return { field, message, received: REDACTED }
  return { field, message, received: receivedText(value) ?? '' }
}

export function isSecretField(field: string): boolean {
  return SECRET_FIELDS.has(field.slice(field.lastIndexOf('.') + 1).toLowerCase())
}

const MAX_RECEIVED = 200
const MAX_DEPTH = 8

/** The rejected input as text, cut to 200 characters, for a detail's `received`. */
export function receivedText(value: unknown): string | undefined {
  if (value === undefined) return undefined
  // Bidirectional controls and invisible characters are shown as `\u202e`: the answer that
  // refuses them must not display as something else itself.
  const text = escapeDeceptive(
    typeof value === 'string' ? value : preview(value, MAX_DEPTH, MAX_RECEIVED + 1),
  )
  if (text.length <= MAX_RECEIVED) return text
  const cut = text.slice(0, MAX_RECEIVED)
  // Don't end on half of a surrogate pair: that would be invalid UTF-16 in the JSON answer.
  const last = cut.charCodeAt(cut.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut
}

/**
 * JSON text of a value that stops at `budget` characters and `depth` levels, so a hostile
 * input (1 MB strings, 100,000 nested arrays) costs little and cannot overflow the stack.
 * Secret fields show as REDACTED.
 */
function preview(value: unknown, depth: number, budget: number): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value) ?? String(value)
    return text.length > budget ? text.slice(0, budget) : text
  }
  if (depth === 0) return Array.isArray(value) ? '[…]' : '{…}'
  const isArray = Array.isArray(value)
  let out = isArray ? '[' : '{'
  let first = true
  for (const key of Object.keys(value)) {
    if (out.length >= budget) break
    const item = (value as Record<string, unknown>)[key]
    const prefix = (first ? '' : ',') + (isArray ? '' : `${JSON.stringify(key)}:`)
    // A secret inside an object shown whole (a body that fails as a whole) stays hidden too.
    const shown =
      !isArray && isSecretField(key)
        ? JSON.stringify(REDACTED)
        : preview(item, depth - 1, budget - out.length - prefix.length)
    out += prefix + shown
    first = false
  }
  return out.length >= budget ? out.slice(0, budget) : out + (isArray ? ']' : '}')
}
