import type { Transaction } from '../../db/unit'
import { jsonResponse } from '../../http/json-response'
import { type IdempotencyClaims, once, type StoredAnswer } from '../../idempotency/store'
import { type NewUser, toView } from '../../users/records'
import type { UserWrites } from '../../users/store'

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
): Promise<Response> {
  const { replayed, answer } = await transaction((tx) =>
    once(tx.idempotency, claim, async () => {
      const user = await tx.users.create(input)
      return {
        status: 201,
        body: JSON.stringify(toView(user)),
        location: `${listPath}/${user.id}`,
      }
    }),
  )
  return replayed ? replay(answer) : answerWith(answer)
}
