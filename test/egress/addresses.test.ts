import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { refusalOf, refusedAs } from '../../src/egress/addresses'

/** [address, what it is (the end of the refusal)] */
type Refused = readonly [string, string]

describe('the addresses an outbound request may reach: global unicast only', () => {
  const ipv4: Refused[] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.10', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', '"this network"'],
    ['0.1.2.3', '"this network"'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.5', 'reserved'], // documentation (TEST-NET-1)
    ['198.51.100.7', 'reserved'], // documentation (TEST-NET-2)
    ['203.0.113.9', 'reserved'], // documentation (TEST-NET-3)
    ['198.18.0.1', 'reserved'], // benchmarking
    ['198.19.255.255', 'reserved'], // benchmarking
    ['192.88.99.1', 'reserved'], // the old 6to4 relay anycast
  ]

  const ipv6: Refused[] = [
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['100::1', 'discard-only'],
    ['2001:db8::1', 'reserved'], // documentation
    ['3fff::1', 'reserved'], // documentation (RFC 9637)
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'ORCHID'],
    ['2001:20::1', 'ORCHIDv2'],
    ['2001:1::1', 'reserved'], // protocol assignments (2001::/23)
    ['4000::1', 'outside 2000::/3'],
    ['::1:0:0:1', 'outside 2000::/3'],
    ['5f00::1', 'segment routing'],
  ]

  /** The review's examples and every form that carries an IPv4 address, judged by it. */
  const carrying: Refused[] = [
    ['::7f00:1', 'IPv4-compatible, carrying 127.0.0.1: loopback'],
    ['::127.0.0.1', 'carrying 127.0.0.1: loopback'],
    ['::a9fe:a9fe', 'IPv4-compatible, carrying 169.254.169.254: link-local'],
    ['::10.0.0.1', 'carrying 10.0.0.1: private'],
    ['::ffff:127.0.0.1', 'IPv4-mapped, carrying 127.0.0.1: loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped, carrying 127.0.0.1: loopback'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped, carrying 169.254.169.254: link-local'],
    ['::ffff:0:7f00:1', 'IPv4-translated (SIIT), carrying 127.0.0.1: loopback'],
    ['::ffff:0:192.168.0.1', 'IPv4-translated (SIIT), carrying 192.168.0.1: private'],
    ['64:ff9b::10.0.0.1', 'NAT64, carrying 10.0.0.1: private'],
    ['64:ff9b::a9fe:a9fe', 'NAT64, carrying 169.254.169.254: link-local'],
    ['64:ff9b:1::7f00:1', 'NAT64, carrying 127.0.0.1: loopback'],
    ['64:ff9b:1:808:8:808::', 'local-use NAT64 (64:ff9b:1::/48) outside its /96 layout'],
    ['2002:c0a8:0101::1', '6to4, carrying 192.168.1.1: private'],
    ['2002:7f00:1::', '6to4, carrying 127.0.0.1: loopback'],
    ['2002:a9fe:a9fe::1', '6to4, carrying 169.254.169.254: link-local'],
    // Teredo: server 65.54.227.120, client 127.0.0.1 (stored inverted: 80ff:fffe).
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, carrying 127.0.0.1: loopback'],
    // Teredo: server 10.0.0.1 (private), client 8.8.8.8.
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'Teredo, carrying 10.0.0.1: private'],
  ]

  for (const [address, what] of [...ipv4, ...ipv6, ...carrying]) {
    test(`${address} is refused: ${what}`, () => {
      expect(refusedAs(address)).toContain(what)
      expect(refusalOf(address)).toStartWith(`${address} is not a global unicast address: `)
    })
  }

  const allowed = [
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.3.1',
    '2606:4700::1111',
    '2a00:1450:4001:81b::200e',
    '::ffff:8.8.8.8',
    '::8.8.8.8',
    '::ffff:0:808:808',
    '64:ff9b::8.8.8.8',
    '64:ff9b:1::808:808',
    '2002:0808:0808::1',
    // Teredo: server 65.54.227.120, client 8.8.8.8 (inverted: f7f7:f7f7).
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
  ]
  for (const address of allowed) {
    test(`${address} is global unicast`, () => {
      expect(refusedAs(address)).toBeNull()
      expect(refusalOf(address)).toBeNull()
    })
  }

  test('every IPv6 form carrying an IPv4 address gets that address’s verdict (2,000 random addresses)', () => {
    const hex = (octets: number[], at: number) =>
      (((octets[at] as number) << 8) | (octets[at + 1] as number)).toString(16)
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }),
        (octets) => {
          const [high, low] = [hex(octets, 0), hex(octets, 2)]
          const verdict = refusedAs(octets.join('.')) === null
          const forms = [
            `::ffff:${high}:${low}`,
            `::${high}:${low}`,
            `::ffff:0:${high}:${low}`,
            `64:ff9b::${high}:${low}`,
            `64:ff9b:1::${high}:${low}`,
            `2002:${high}:${low}::1`,
            `2001:0:${high}:${low}:8000:63bf:f7f7:f7f7`,
          ]
          for (const form of forms)
            expect([form, refusedAs(form) === null]).toEqual([form, verdict])
        },
      ),
      { numRuns: 2000 },
    )
  })

  test('a name is not an address (names are resolved first, never connected to by name)', () => {
    expect(refusalOf('localhost')).toBe('localhost is not an IP address')
  })
})
