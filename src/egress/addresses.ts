import type { BlockList } from 'node:net'
import { nodeNet } from '../config-values'

/**
 * Addresses a request roster makes on a user's behalf must not reach: this machine, the private
 * networks around it, link-local (cloud metadata services live at 169.254.169.254), and ranges
 * that are not a public host at all (unspecified, multicast, reserved, documentation). A URL
 * that resolves to one of them is refused, unless the operator allows private addresses.
 */
const REFUSED_RANGES: readonly (readonly [string, number, 'ipv4' | 'ipv6'])[] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network"
  ['10.0.0.0', 8, 'ipv4'], // private
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['169.254.0.0', 16, 'ipv4'], // link-local (cloud metadata)
  ['172.16.0.0', 12, 'ipv4'], // private
  ['192.0.0.0', 24, 'ipv4'], // protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.168.0.0', 16, 'ipv4'], // private
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['::1', 128, 'ipv6'], // loopback
  ['100::', 64, 'ipv6'], // discard
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['fc00::', 7, 'ipv6'], // unique local (private)
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8, 'ipv6'], // multicast
]

let refused: BlockList | undefined

function refusedList(): BlockList {
  if (refused === undefined) {
    const { BlockList } = nodeNet()
    refused = new BlockList()
    for (const [address, prefix, family] of REFUSED_RANGES) {
      refused.addSubnet(address, prefix, family)
    }
  }
  return refused
}

/** An IPv4 address carried inside an IPv6 one (mapped, NAT64, 6to4), which is what is reached. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase()
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  if (dotted !== null) return dotted[1] as string
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower)
  if (hex !== null) return ipv4OfWords(hex[1] as string, hex[2] as string)
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower)
  if (sixToFour !== null) return ipv4OfWords(sixToFour[1] as string, sixToFour[2] as string)
  return null
}

function ipv4OfWords(high: string, low: string): string {
  const a = Number.parseInt(high, 16)
  const b = Number.parseInt(low, 16)
  return [a >> 8, a & 0xff, b >> 8, b & 0xff].join('.')
}

/** Whether `text` is an IP address (a literal in a URL) rather than a name to resolve. */
export function isIpAddress(text: string): boolean {
  return nodeNet().isIP(text) !== 0
}

/**
 * Why `address` (an IP, as a resolver gives it) must not be reached, or null when it is a
 * public address. Not an IP at all is refused too: nothing here connects by name.
 */
export function refusalOf(address: string): string | null {
  const family = nodeNet().isIP(address)
  if (family === 0) return `${address} is not an IP address`
  const inner = family === 6 ? embeddedIpv4(address) : null
  if (inner !== null) return refusalOf(inner) === null ? null : describe(address)
  return refusedList().check(address, family === 6 ? 'ipv6' : 'ipv4') ? describe(address) : null
}

function describe(address: string): string {
  return `${address} is a loopback, private, link-local or reserved address`
}
