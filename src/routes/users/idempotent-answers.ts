import type { AuditSource } from '../../audit/events'
import type { Transaction } from '../../db/unit'
import { jsonResponse } from '../../http/json-response'
import { type IdempotencyClaims, once, type StoredAnswer } from '../../idempotency/store'
import { type NewUser, toView, type UserRecord } from '../../users/records'
import type { UserWrites } from '../../users/store'

/**
 * POST /users' 201, shaped once: the user's view and where it now lives. The first answer
 * sends it; with an Idempotency-Key it is also what is stored and replayed.
 */
export function createdAnswer(user: UserRecord, listPath: string) {
  return { status: 201, view: toView(user), location: `${listPath}/${user.id}` }
}

/** A stored answer as a Response: the first answer to a key, and every replay of it. */
export function answerWith(answer: StoredAnswer, extra: Record<string, string> = {}): Response {
  const headers = answer.location === null ? extra : { ...extra, location: answer.location }
  return jsonResponse(answer.body, answer.status, headers)
}

export function replay(answer: StoredAnswer): Response {
  return answerWith(answer, { 'idempotent-replayed': 'true' })
}

/**
 * POST /users with an Idempotency-Key: the key's claim, the user and the answer in one unit of
 * work, so two requests with one key cannot both create. The first answer, or its replay.
 */
export async function createOnce(
  transaction: Transaction<{ users: UserWrites; idempotency: IdempotencyClaims }>,
  claim: { scope: string; key: string; fingerprint: string },
  input: NewUser,
  listPath: string,
  by: AuditSource,
): Promise<Response> {
  const { replayed, answer } = await transaction((tx) =>
    once(tx.idempotency, claim, async () => {
      const { status, view, location } = createdAnswer(await tx.users.create(input, by), listPath)
      return { status, body: JSON.stringify(view), location }
    }),
  )
  return replayed ? replay(answer) : answerWith(answer)
}
