import { standardKey } from '../webhooks/signature'

/** The headers that carry a delivery's Standard Webhooks signature. */
export interface SignedHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

/**
 * Signs a delivery as Standard Webhooks does: `v1,` and the base64 HMAC-SHA256 of
 * `id.timestamp.body` under each secret's decoded bytes, space-separated (during a rotation
 * the old secret signs too, so a receiver holding either verifies).
 */
export function signDelivery(
  id: string,
  timestampS: number,
  body: string,
  secrets: readonly string[],
): SignedHeaders {
  const signed = `${id}.${timestampS}.${body}`
  const signatures = secrets.map((secret) => {
    const key = standardKey(secret)
    if (key === null) throw new Error('a webhook endpoint secret is not whsec_ and base64')
    return `v1,${new Bun.CryptoHasher('sha256', key).update(signed).digest('base64')}`
  })
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': signatures.join(' '),
  }
}
