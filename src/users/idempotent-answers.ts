import { jsonResponse } from '../http/json-response'
import type { StoredAnswer } from '../idempotency/store'

/** A stored answer as a Response: the first answer to a key, and every replay of it. */
export function answerWith(answer: StoredAnswer, extra: Record<string, string> = {}): Response {
  const headers = answer.location === null ? extra : { ...extra, location: answer.location }
  return jsonResponse(answer.body, answer.status, headers)
}

export function replay(answer: StoredAnswer): Response {
  return answerWith(answer, { 'idempotent-replayed': 'true' })
}
