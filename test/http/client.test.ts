import { describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import type { TrustProxy } from '../../src/config'
import { cameOverTls, clientIp } from '../../src/http/client'

/** A request that reached roster from `peer`, with these X-Forwarded-* headers. */
function from(peer: string, headers: Record<string, string>) {
  const request = new Request('http://localhost/users', { headers })
  const server = { requestIP: () => ({ address: peer }) } as unknown as Server<unknown>
  return (trust: TrustProxy) => clientIp(request, server, trust)
}

describe('the client address behind proxies', () => {
  const forged = { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' }

  test('without --trust-proxy: the socket peer, whatever the headers say', () => {
    expect(from('10.0.0.2', forged)(null)).toBe('10.0.0.2')
  })

  test('one hop: the address the nearest proxy appended, never the client-written first entry', () => {
    expect(from('10.0.0.2', forged)({ hops: 1 })).toBe('203.0.113.9')
    expect(from('10.0.0.2', { 'x-forwarded-for': '203.0.113.9' })({ hops: 1 })).toBe('203.0.113.9')
    expect(from('10.0.0.2', {})({ hops: 1 })).toBe('10.0.0.2')
  })

  test('N hops: the entry N from the end; fewer entries than hops: the first', () => {
    const chain = { 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 10.0.0.3' }
    expect(from('10.0.0.2', chain)({ hops: 2 })).toBe('203.0.113.9')
    expect(from('10.0.0.2', { 'x-forwarded-for': '203.0.113.9' })({ hops: 3 })).toBe('203.0.113.9')
  })

  test('proxy addresses: the first address from the right that is not a listed proxy', () => {
    const trust = { proxies: ['10.0.0.0/8', '192.0.2.7', 'fd00::/8'] }
    const chain = { 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 192.0.2.7, 10.1.1.1' }
    expect(from('10.0.0.2', chain)(trust)).toBe('203.0.113.9')
    // A peer that is not a listed proxy is the client: its headers are not believed.
    expect(from('198.51.100.4', chain)(trust)).toBe('198.51.100.4')
    expect(from('fd12::1', { 'x-forwarded-for': '[2001:db8::5]:4711' })(trust)).toBe('2001:db8::5')
    expect(from('10.0.0.2', { 'x-forwarded-for': '10.0.0.9' })(trust)).toBe('10.0.0.9')
  })

  test('X-Forwarded-Proto: the entry the nearest proxy set, only when proxies are trusted', () => {
    const https = (value: string, trust: TrustProxy) =>
      cameOverTls(
        new Request('http://localhost/', { headers: { 'x-forwarded-proto': value } }),
        trust,
      )
    expect(https('https', null)).toBe(false)
    expect(https('https', { hops: 1 })).toBe(true)
    expect(https('https, http', { hops: 1 })).toBe(false)
    expect(https('https, http', { hops: 2 })).toBe(true)
  })
})
