import type * as IpAddr from 'ipaddr.js'
import { nodeNet } from '../config-values'

/**
 * Which addresses a request roster makes on a user's behalf may reach: global unicast ones
 * only (CONTRACT section 17). It is an allow-list, judged by ipaddr.js (which keeps IANA's
 * special-purpose registries): an address is allowed when the library finds it in none of
 * them, and for IPv6 only inside 2000::/3, the block IANA allocates global unicast from. So a
 * range nobody listed here (and any the library adds later) is refused, never let through.
 * An IPv6 address that carries an IPv4 address is judged by the IPv4 address it reaches.
 */

type IPv4 = IpAddr.IPv4
type IPv6 = IpAddr.IPv6

let library: typeof IpAddr | undefined
function ipaddr(): typeof IpAddr {
  // Loaded on first use: most servers never send a webhook, and every start would pay for it.
  library ??= require('ipaddr.js') as typeof IpAddr
  return library
}

/** What an IPv4 address that is not global unicast is, by the library's name of its range. */
const IPV4_RANGES: Readonly<Record<string, string>> = {
  unspecified: '"this network" (0.0.0.0/8)',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local (cloud metadata services live at 169.254.169.254)',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (shared address space)',
  private: 'private',
  reserved: 'reserved (protocol assignments, documentation, benchmarking or future use)',
  as112: 'an AS112 DNS sink',
  amt: 'an AMT relay anycast address',
}

/** The same for IPv6; the forms that carry an IPv4 address are judged by it instead. */
const IPV6_RANGES: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'unique-local (private)',
  deprecatedSiteLocal: 'site-local (deprecated, still routed inside some networks)',
  discard: 'discard-only',
  benchmarking: 'benchmarking',
  amt: 'an AMT relay anycast address',
  as112v6: 'an AS112 DNS sink',
  deprecatedOrchid: 'ORCHID (not routable)',
  orchid2: 'ORCHIDv2 (not routable)',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID tag (not routable)',
  segmentRouting: 'segment routing (not routable)',
  reserved: 'reserved (protocol assignments or documentation)',
  rfc6052: 'local-use NAT64 (64:ff9b:1::/48) outside its /96 layout',
}

/** Whether `text` is an IP address (a literal in a URL) rather than a name to resolve. */
export function isIpAddress(text: string): boolean {
  return nodeNet().isIP(text) !== 0
}

/**
 * Why `address` (an IP, as a resolver gives it) must not be reached, or null when it is a
 * global unicast address. Not an IP at all is refused too: nothing here connects by name.
 */
export function refusalOf(address: string): string | null {
  if (!isIpAddress(address)) return `${address} is not an IP address`
  const what = refusedAs(address)
  return what === null ? null : `${address} is not a global unicast address: ${what}`
}

/**
 * What `address` is when it is not a global unicast address ("loopback", "IPv4-compatible,
 * carrying 127.0.0.1: loopback"), or null when it is one. `address` must be an IP.
 */
export function refusedAs(address: string): string | null {
  let parsed: IPv4 | IPv6
  try {
    parsed = ipaddr().parse(address)
  } catch {
    // Node took it for an IP and the library does not: refused, never sent on a guess.
    return 'not a form of address the judge reads'
  }
  return parsed.kind() === 'ipv4' ? ipv4Refusal(parsed as IPv4) : ipv6Refusal(parsed as IPv6)
}

function ipv4Refusal(address: IPv4): string | null {
  const range = address.range()
  return range === 'unicast' ? null : (IPV4_RANGES[range] ?? range)
}

function ipv6Refusal(address: IPv6): string | null {
  const carried = carriedIpv4(address)
  if (carried !== null) {
    for (const inner of carried.addresses) {
      const why = ipv4Refusal(inner)
      if (why !== null) return `${carried.form}, carrying ${inner.toString()}: ${why}`
    }
    return null
  }
  const range = address.range()
  if (range !== 'unicast') return IPV6_RANGES[range] ?? range
  // The library names the special ranges; whatever lies outside 2000::/3 is not allocated.
  return address.match(globalUnicastBlock()) ? null : 'outside 2000::/3 (not allocated as global)'
}

let block: [IPv6, number] | undefined
function globalUnicastBlock(): [IPv6, number] {
  block ??= ipaddr().IPv6.parseCIDR('2000::/3')
  return block
}

/** The IPv4 address(es) an IPv6 form carries, which is what a packet to it reaches. */
interface Carried {
  form: string
  addresses: IPv4[]
}

/**
 * The IPv4 address inside an IPv6 address of a form that carries one: mapped (::ffff:0:0/96),
 * compatible (::/96, deprecated, still turned into IPv4 by some stacks), SIIT
 * (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, and 64:ff9b:1::/48 in its /96 layout), 6to4
 * (2002::/16) and Teredo (2001::/32: its server, and its client, whose address is inverted).
 * Null for any other address.
 */
function carriedIpv4(address: IPv6): Carried | null {
  const parts = address.parts
  const word = (index: number) => parts[index] as number
  const zeroes = (from: number, to: number) => parts.slice(from, to).every((part) => part === 0)
  switch (address.range()) {
    case 'ipv4Mapped':
      return { form: 'IPv4-mapped', addresses: [ipv4Of(word(6), word(7))] }
    case 'rfc6145':
      return { form: 'IPv4-translated (SIIT)', addresses: [ipv4Of(word(6), word(7))] }
    case 'rfc6052':
      // 64:ff9b:1::/48 may hold the address at several places (RFC 6052 2.2): only its /96
      // layout, zeros up to the last 32 bits, is judged; the rest stays refused by its range.
      return zeroes(3, 6) ? { form: 'NAT64', addresses: [ipv4Of(word(6), word(7))] } : null
    case '6to4':
      return { form: '6to4', addresses: [ipv4Of(word(1), word(2))] }
    case 'teredo':
      return {
        form: 'Teredo',
        addresses: [ipv4Of(word(2), word(3)), ipv4Of(word(6) ^ 0xffff, word(7) ^ 0xffff)],
      }
  }
  // IPv4-compatible: 96 zero bits, then the address (:: and ::1 keep their own names).
  if (zeroes(0, 6) && !(word(6) === 0 && word(7) <= 1)) {
    return { form: 'IPv4-compatible', addresses: [ipv4Of(word(6), word(7))] }
  }
  return null
}

function ipv4Of(high: number, low: number): IPv4 {
  return new (ipaddr().IPv4)([high >> 8, high & 0xff, low >> 8, low & 0xff])
}
