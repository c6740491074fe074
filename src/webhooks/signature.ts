import { AppError } from '../errors/errors'

export type WebhookScheme = 'standard' | 'stripe' | 'sha256'

/** Timestamped schemes refuse deliveries signed more than this far from our clock. */
export const TOLERANCE_S = 300

export interface Verified {
  scheme: WebhookScheme
  /** The event id when the scheme carries it in a header (Standard Webhooks, GitHub). */
  headerEventId: string | null
}

const HEX_SHA256 = /^[0-9a-f]{64}$/i
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const DIGITS = /^[0-9]{1,12}$/

/**
 * Verifies a delivery's raw bytes before anything parses them. The header present picks the
 * scheme: Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`),
 * `Stripe-Signature`, or `X-Hub-Signature-256` / `X-Signature` (`sha256=`). Every configured
 * secret is tried (rotation), each used as that scheme's senders use it, against every
 * signature in the header; one match is enough. Anything else throws INVALID_SIGNATURE.
 */
export function verifySignature(
  headers: Headers,
  body: Uint8Array,
  secrets: readonly string[],
  nowS: number,
): Verified {
  if (body.byteLength === 0) throw refused('The body is empty')
  const scheme = schemeOf(headers)
  if (secrets.length === 0) throw refused('No webhook secret is configured on this server')
  switch (scheme) {
    case 'standard':
      return verifyStandard(headers, body, secrets, nowS)
    case 'stripe':
      return verifyStripe(headers.get('stripe-signature') ?? '', body, secrets, nowS)
    case 'sha256':
      return verifySha256(headers, body, secrets)
  }
}

/** The scheme the headers name, for metrics: 'none' or 'mixed' when that is not one. */
export function claimedScheme(headers: Headers): WebhookScheme | 'none' | 'mixed' {
  try {
    return schemeOf(headers)
  } catch {
    return headers.has('webhook-signature') ||
      headers.has('stripe-signature') ||
      headers.has('x-hub-signature-256') ||
      headers.has('x-signature')
      ? 'mixed'
      : 'none'
  }
}

function schemeOf(headers: Headers): WebhookScheme {
  const present: WebhookScheme[] = []
  if (['webhook-id', 'webhook-timestamp', 'webhook-signature'].some((name) => headers.has(name))) {
    present.push('standard')
  }
  if (headers.has('stripe-signature')) present.push('stripe')
  if (headers.has('x-hub-signature-256') || headers.has('x-signature')) present.push('sha256')
  if (present.length === 0)
    throw refused(
      'No signature header (webhook-signature, Stripe-Signature or X-Hub-Signature-256)',
    )
  if (present.length > 1) throw refused('Signature headers of more than one scheme; send one')
  return present[0] as WebhookScheme
}

function verifyStandard(
  headers: Headers,
  body: Uint8Array,
  secrets: readonly string[],
  nowS: number,
): Verified {
  const id = headers.get('webhook-id') ?? ''
  const timestamp = headers.get('webhook-timestamp') ?? ''
  const header = headers.get('webhook-signature') ?? ''
  if (id === '' || id.length > 255 || !DIGITS.test(timestamp) || header === '') {
    throw refused(
      'Standard Webhooks needs webhook-id, webhook-timestamp (seconds) and webhook-signature',
    )
  }
  checkTimestamp(Number(timestamp), nowS)
  const given = header
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => entry.slice(3))
    .filter((value) => BASE64.test(value))
    .map((value) => Buffer.from(value, 'base64'))
  if (given.length === 0) throw refused('webhook-signature has no v1 signature')
  const keys = secrets.map(standardKey).filter((key): key is Buffer => key !== null)
  if (matchesAny(keys, `${id}.${timestamp}.`, body, given))
    return { scheme: 'standard', headerEventId: id }
  throw refused('No signature matches (wrong secret, or the body or headers were altered)')
}

/** Standard Webhooks secrets are `whsec_` + base64: the key is the decoded bytes. */
export function standardKey(secret: string): Buffer | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret
  if (!BASE64.test(encoded)) return null
  const key = Buffer.from(encoded, 'base64')
  return key.byteLength > 0 ? key : null
}

function verifyStripe(
  header: string,
  body: Uint8Array,
  secrets: readonly string[],
  nowS: number,
): Verified {
  let timestamp: string | null = null
  const given: Buffer[] = []
  for (const part of header.split(',')) {
    const [key, value = ''] = part.trim().split('=', 2)
    if (key === 't' && DIGITS.test(value)) timestamp = value
    if (key === 'v1' && HEX_SHA256.test(value)) given.push(Buffer.from(value, 'hex'))
  }
  if (timestamp === null || given.length === 0) {
    throw refused('Stripe-Signature needs t=<seconds> and at least one v1=<hex>')
  }
  checkTimestamp(Number(timestamp), nowS)
  const keys = secrets.map((secret) => Buffer.from(secret, 'utf8'))
  if (matchesAny(keys, `${timestamp}.`, body, given))
    return { scheme: 'stripe', headerEventId: null }
  throw refused('No signature matches (wrong secret, or the body was altered)')
}

function verifySha256(headers: Headers, body: Uint8Array, secrets: readonly string[]): Verified {
  const hub = headers.get('x-hub-signature-256')
  const plain = headers.get('x-signature')
  if (hub !== null && plain !== null && hub.trim() !== plain.trim()) {
    throw refused('X-Hub-Signature-256 and X-Signature disagree')
  }
  const given = (hub ?? plain ?? '')
    .split(/[\s,]+/)
    .filter((entry) => entry.startsWith('sha256='))
    .map((entry) => entry.slice('sha256='.length))
    .filter((value) => HEX_SHA256.test(value))
    .map((value) => Buffer.from(value, 'hex'))
  if (given.length === 0) throw refused('The signature header needs sha256=<hex>')
  const keys = secrets.map((secret) => Buffer.from(secret, 'utf8'))
  if (matchesAny(keys, '', body, given)) {
    return { scheme: 'sha256', headerEventId: headers.get('x-github-delivery') }
  }
  throw refused('No signature matches (wrong secret, or the body was altered)')
}

function checkTimestamp(timestampS: number, nowS: number): void {
  if (Math.abs(nowS - timestampS) > TOLERANCE_S) {
    throw refused(
      `The signature's timestamp is more than ${TOLERANCE_S} seconds from the server clock`,
    )
  }
}

/** HMAC-SHA256 of prefix+body under each key, compared in constant time with each given one. */
function matchesAny(
  keys: readonly Buffer[],
  prefix: string,
  body: Uint8Array,
  given: readonly Buffer[],
): boolean {
  let matched = false
  for (const key of keys) {
    const expected = new Bun.CryptoHasher('sha256', key).update(prefix).update(body).digest()
    for (const signature of given) {
      // timingSafeEqual throws on a length mismatch; a wrong length is simply no match.
      if (
        signature.byteLength === expected.byteLength &&
        crypto.timingSafeEqual(signature, expected)
      )
        matched = true
    }
  }
  return matched
}

function refused(message: string): AppError {
  return new AppError('INVALID_SIGNATURE', message)
}
