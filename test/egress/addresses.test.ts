import { describe, expect, test } from 'bun:test'
import { refusalOf } from '../../src/egress/addresses'

describe('the addresses an outbound request may not reach', () => {
  const refused = [
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.10',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.5',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    '2002:c0a8:0101::1',
    '2001:db8::1',
  ]
  for (const address of refused) {
    test(`${address} is refused`, () => {
      expect(refusalOf(address)).toContain(address)
    })
  }

  const allowed = [
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '2002:0808:0808::1',
  ]
  for (const address of allowed) {
    test(`${address} is a public address`, () => {
      expect(refusalOf(address)).toBeNull()
    })
  }

  test('a name is not an address (names are resolved first, never connected to by name)', () => {
    expect(refusalOf('localhost')).toBe('localhost is not an IP address')
  })
})
