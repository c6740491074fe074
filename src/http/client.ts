import type { BlockList } from 'node:net'
import type { Server } from 'bun'
import type { TrustProxy } from '../config'
import { nodeNet } from '../config-values'

/**
 * The client's IP. Without --trust-proxy, the socket's peer. With it, the address the nearest
 * trusted proxy appended to X-Forwarded-For, never an entry the client wrote itself: the chain
 * is the peer followed by X-Forwarded-For from its last entry back, and the client is the first
 * address in it that is not a trusted proxy (with `hops: N`, the first N are the proxies).
 * ('unknown' in-process, where there is no socket.)
 */
export function clientIp(
  request: Request,
  server: Server<unknown> | null,
  trust: TrustProxy,
): string {
  const peer = server?.requestIP(request)?.address ?? 'unknown'
  if (trust === null) return peer
  const forwarded = request.headers.get('x-forwarded-for')
  if (forwarded === null) return peer
  const chain = [peer, ...forwardedEntries(forwarded).reverse()]
  if ('hops' in trust) return chain[Math.min(trust.hops, chain.length - 1)] as string
  const proxies = proxyList(trust.proxies)
  for (const address of chain) if (!isTrusted(proxies, address)) return address
  return chain.at(-1) as string
}

/**
 * True when the request reached us over TLS, or a trusted proxy says it did: X-Forwarded-Proto's
 * entry from the same hop as the client address (its last entry, for one proxy).
 */
export function cameOverTls(request: Request, trust: TrustProxy): boolean {
  if (request.url.startsWith('https:')) return true
  if (trust === null) return false
  const header = request.headers.get('x-forwarded-proto')
  if (header === null) return false
  const entries = forwardedEntries(header)
  const hops = 'hops' in trust ? trust.hops : 1
  return entries[Math.max(0, entries.length - hops)]?.toLowerCase() === 'https'
}

/** The entries of an X-Forwarded-* header, trimmed, with a port or brackets taken off. */
function forwardedEntries(header: string): string[] {
  return header
    .split(',')
    .map((entry) => withoutPort(entry.trim()))
    .filter((entry) => entry !== '')
}

function withoutPort(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry)
  if (bracketed !== null) return bracketed[1] as string
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry)
  return v4WithPort === null ? entry : (v4WithPort[1] as string)
}

const lists = new WeakMap<readonly string[], BlockList>()

/** The --trust-proxy address list as a BlockList (IPv4, IPv6, CIDR ranges), made once. */
function proxyList(ranges: readonly string[]): BlockList {
  let list = lists.get(ranges)
  if (list === undefined) {
    const { BlockList, isIP } = nodeNet()
    list = new BlockList()
    for (const range of ranges) {
      const [address = '', prefix] = range.split('/')
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
      if (prefix === undefined) list.addAddress(address, family)
      else list.addSubnet(address, Number(prefix), family)
    }
    lists.set(ranges, list)
  }
  return list
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = nodeNet().isIP(address)
  return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4')
}
