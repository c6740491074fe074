import { describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { newEndpointSecret, signingSecrets } from '../../src/outbound/endpoints'
import { signDelivery } from '../../src/outbound/signing'
import { verifySignature } from '../../src/webhooks/signature'

const body = JSON.stringify({
  type: 'user.created',
  timestamp: '2026-11-27T10:00:00.000Z',
  data: {},
})

describe('a delivery’s signature (Standard Webhooks)', () => {
  test('verifies with the reference library and with roster’s own inbound verifier', () => {
    const secret = newEndpointSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    const now = Math.floor(Date.now() / 1000)
    const headers = signDelivery('evt_42', now, body, [secret])
    expect(headers['webhook-id']).toBe('evt_42')
    expect(headers['webhook-timestamp']).toBe(String(now))
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body))
    expect(
      verifySignature(new Headers({ ...headers }), new TextEncoder().encode(body), [secret], now),
    ).toEqual({
      scheme: 'standard',
      headerEventId: 'evt_42',
    })
  })

  test('a changed byte, id or timestamp fails verification', () => {
    const secret = newEndpointSecret()
    const now = Math.floor(Date.now() / 1000)
    const headers = signDelivery('evt_1', now, body, [secret])
    const verifier = new Webhook(secret)
    expect(() => verifier.verify(`${body} `, headers)).toThrow()
    expect(() => verifier.verify(body, { ...headers, 'webhook-id': 'evt_2' })).toThrow()
    expect(() =>
      verifier.verify(body, { ...headers, 'webhook-timestamp': String(now - 1) }),
    ).toThrow()
    expect(() => new Webhook(newEndpointSecret()).verify(body, headers)).toThrow()
  })

  test('during a rotation both secrets sign, so a receiver holding either verifies', () => {
    const old = newEndpointSecret()
    const current = newEndpointSecret()
    const now = Math.floor(Date.now() / 1000)
    const headers = signDelivery('evt_7', now, body, [current, old])
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2)
    expect(new Webhook(old).verify(body, headers)).toEqual(JSON.parse(body))
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body))
  })

  test('the old secret signs only until it expires', () => {
    const endpoint = {
      secret: 'whsec_bmV3',
      previous_secret: 'whsec_b2xk',
      previous_secret_expires_at: '2026-11-27T10:00:00.000Z',
    }
    expect(signingSecrets(endpoint, '2026-11-27T09:59:59.999Z')).toEqual([
      'whsec_bmV3',
      'whsec_b2xk',
    ])
    expect(signingSecrets(endpoint, '2026-11-27T10:00:00.000Z')).toEqual(['whsec_bmV3'])
    expect(signingSecrets({ ...endpoint, previous_secret: null }, '2026-01-01T00:00:00Z')).toEqual([
      'whsec_bmV3',
    ])
  })
})
