import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { verifySignature } from '../../src/webhooks/signature'
import {
  GITHUB_SECRET,
  githubHeaders,
  STANDARD_SECRET,
  STRIPE_SECRET,
  standardHeaders,
  stripeHeaders,
} from '../helpers/webhooks'

const body = '{"id":"evt_1","type":"user.created","data":{"object":{"email":"a@b.co"}}}'
const bytes = (text: string) => new TextEncoder().encode(text)
const now = () => Date.now() / 1000

function verify(
  headers: Record<string, string>,
  payload = body,
  secrets = [STANDARD_SECRET, STRIPE_SECRET, GITHUB_SECRET],
  at = now(),
) {
  return verifySignature(new Headers(headers), bytes(payload), secrets, at)
}

/** Waits for signed headers, and returns the check to run with them. */
async function sign(
  headers: Promise<Record<string, string>>,
  check: (headers: Record<string, string>) => unknown,
) {
  const ready = await headers
  return () => check(ready)
}

function refused(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    expect(error).toMatchObject({ errorCode: 'INVALID_SIGNATURE', status: 400 })
    return (error as Error).message
  }
  throw new Error('expected a refusal')
}

describe('valid signatures, made by the senders’ own libraries', () => {
  test('Standard Webhooks (the key is the base64 after whsec_)', () => {
    const headers = standardHeaders(body, STANDARD_SECRET, 'msg_abc')
    expect(verify(headers)).toEqual({ scheme: 'standard', headerEventId: 'msg_abc' })
  })

  test('Stripe (the key is the whole secret)', async () => {
    expect(verify(await stripeHeaders(body))).toEqual({ scheme: 'stripe', headerEventId: null })
  })

  test('GitHub X-Hub-Signature-256, and the same as X-Signature', async () => {
    const headers = await githubHeaders(body, GITHUB_SECRET, 'delivery-1')
    expect(verify(headers)).toEqual({ scheme: 'sha256', headerEventId: 'delivery-1' })
    expect(verify({ 'x-signature': headers['x-hub-signature-256'] as string })).toEqual({
      scheme: 'sha256',
      headerEventId: null,
    })
    expect(
      verify({ ...headers, 'x-signature': headers['x-hub-signature-256'] as string }).scheme,
    ).toBe('sha256')
  })
})

describe('rotation', () => {
  test('the old and the new secret both work while both are configured; a removed one does not', async () => {
    const old = 'whsec_old_stripe_secret'
    const fresh = 'whsec_new_stripe_secret'
    const signedOld = await stripeHeaders(body, old)
    const signedNew = await stripeHeaders(body, fresh)
    expect(verify(signedOld, body, [fresh, old]).scheme).toBe('stripe')
    expect(verify(signedNew, body, [fresh, old]).scheme).toBe('stripe')
    refused(() => verify(signedOld, body, [fresh]))
  })

  test('several signatures in one header: valid if any one is', async () => {
    const good = standardHeaders(body)
    const bad = `v1,${Buffer.alloc(32, 7).toString('base64')}`
    expect(
      verify({ ...good, 'webhook-signature': `${bad} ${good['webhook-signature']}` }).scheme,
    ).toBe('standard')
    const stripe = (await stripeHeaders(body))['stripe-signature']
    const t = /t=(\d+)/.exec(stripe)?.[1]
    const v1 = /v1=([0-9a-f]+)/.exec(stripe)?.[1]
    expect(verify({ 'stripe-signature': `t=${t},v1=${'0'.repeat(64)},v1=${v1}` }).scheme).toBe(
      'stripe',
    )
  })
})

describe('refusals: INVALID_SIGNATURE', () => {
  test('no signature header at all', () => {
    expect(refused(() => verify({}))).toContain('No signature header')
  })

  test('an empty body', async () => {
    refused(() => verify(standardHeaders(''), ''))
  })

  test('headers of two schemes at once', async () => {
    expect(
      refused(() => verify({ ...standardHeaders(body), 'stripe-signature': 't=1,v1=00' })),
    ).toContain('more than one scheme')
  })

  test('X-Hub-Signature-256 and X-Signature that disagree', async () => {
    const headers = await githubHeaders(body)
    expect(
      refused(() => verify({ ...headers, 'x-signature': `sha256=${'a'.repeat(64)}` })),
    ).toContain('disagree')
  })

  test.each([
    ['webhook-signature without v1', { 'webhook-signature': 'v2,abc' }],
    ['a non-numeric timestamp', { 'webhook-timestamp': 'yesterday' }],
    ['an empty webhook-id', { 'webhook-id': '' }],
    ['signature not base64', { 'webhook-signature': 'v1,!!!!' }],
    [
      'a signature of the wrong length (must not throw)',
      { 'webhook-signature': `v1,${Buffer.alloc(5).toString('base64')}` },
    ],
  ])('Standard Webhooks with %s', (_label, override) => {
    refused(() => verify({ ...standardHeaders(body), ...override }))
  })

  test.each([
    't=123',
    'v1=abc',
    'garbage',
    '',
    `t=${Math.floor(Date.now() / 1000)},v1=zz`,
    `t=${Math.floor(Date.now() / 1000)},v1=${'ab'.repeat(10)}`,
  ])('a malformed Stripe-Signature %p', (header) => {
    refused(() => verify({ 'stripe-signature': header }))
  })

  test.each(['md5=abc', 'sha256=', `sha256=${'g'.repeat(64)}`, 'sha256=abcd'])(
    'a malformed X-Hub-Signature-256 %p',
    (header) => {
      refused(() => verify({ 'x-hub-signature-256': header }))
    },
  )

  test('the wrong secret, for every scheme', async () => {
    refused(() =>
      verify(
        standardHeaders(
          body,
          `whsec_${Buffer.from('another-key-entirely-32-bytes!!').toString('base64')}`,
        ),
      ),
    )
    refused(await sign(stripeHeaders(body, 'whsec_wrong'), (headers) => verify(headers)))
    refused(await sign(githubHeaders(body, 'wrong'), (headers) => verify(headers)))
  })

  test('one altered byte in the body, for every scheme', async () => {
    const altered = body.replace('a@b.co', 'a@b.cp')
    refused(() => verify(standardHeaders(body), altered))
    refused(await sign(stripeHeaders(body), (headers) => verify(headers, altered)))
    refused(await sign(githubHeaders(body), (headers) => verify(headers, altered)))
  })

  test('stale and future timestamps (more than 300 s away); 299 s is fine', async () => {
    const at = (offsetS: number) => new Date(Date.now() + offsetS * 1000)
    expect(refused(() => verify(standardHeaders(body, STANDARD_SECRET, 'm', at(-301))))).toContain(
      '300 seconds',
    )
    refused(() => verify(standardHeaders(body, STANDARD_SECRET, 'm', at(301))))
    refused(await sign(stripeHeaders(body, STRIPE_SECRET, at(-301)), (headers) => verify(headers)))
    refused(await sign(stripeHeaders(body, STRIPE_SECRET, at(301)), (headers) => verify(headers)))
    expect(verify(standardHeaders(body, STANDARD_SECRET, 'm', at(-299))).scheme).toBe('standard')
    expect(verify(await stripeHeaders(body, STRIPE_SECRET, at(299))).scheme).toBe('stripe')
  })

  test('a signature over the right body with the key used the wrong way (Stripe-style key for Standard Webhooks)', () => {
    const id = 'msg_1'
    const ts = String(Math.floor(Date.now() / 1000))
    const wrongKey = createHmac('sha256', STANDARD_SECRET)
      .update(`${id}.${ts}.${body}`)
      .digest('base64')
    refused(() =>
      verify({ 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${wrongKey}` }),
    )
  })

  test('with no secret configured, every delivery is refused', async () => {
    expect(
      refused(await sign(githubHeaders(body), (headers) => verify(headers, body, []))),
    ).toContain('No webhook secret')
  })
})
