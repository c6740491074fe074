import type * as Dns from 'node:dns/promises'
import { isIpAddress, refusalOf, refusedAs } from './addresses'

/**
 * Requests roster makes to URLs its users gave (outbound webhooks). A URL's host is resolved
 * here, every address it resolves to must be global unicast (refusalOf), and the request goes to the
 * checked address itself, with the URL's host in `Host` and, over TLS, as the name the
 * certificate must carry: a DNS answer that changes between the check and the connection
 * (rebinding) cannot move the request elsewhere. Redirects are never followed.
 */
export interface EgressPolicy {
  /** --webhook-allow-private: any address may be reached (loopback, private: tests, a LAN). */
  allowPrivate: boolean
  /** Extra certificate authorities trusted over TLS (tests); the system's otherwise. */
  ca?: string
  /** How a host name becomes addresses; the system resolver (getaddrinfo) unless given. */
  resolve?: (host: string) => Promise<string[]>
}

/** A destination the policy refuses, or that cannot be resolved: nothing was sent. */
export class EgressRefused extends Error {}

/** What a receiver answered. */
export interface EgressAnswer {
  status: number
  /** The start of the answer's body (at most BODY_KEPT bytes, as text). */
  body: string
  /** From sending to the answer's headers and kept body. */
  ms: number
}

/** How much of an answer's body is read and kept (for a delivery log); the rest is dropped. */
export const BODY_KEPT = 1024

let dns: typeof Dns | undefined
function nodeDns(): typeof Dns {
  // Loaded on first use: most servers never send a webhook, and every start would pay for it.
  dns ??= require('node:dns/promises') as typeof Dns
  return dns
}

async function systemResolve(host: string): Promise<string[]> {
  const found = await nodeDns().lookup(host, { all: true, verbatim: true })
  return found.map((entry) => entry.address)
}

/** The URL's host without an IPv6 literal's brackets. */
function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

/**
 * The addresses `url` would reach, each allowed by the policy; throws EgressRefused naming the
 * first that is not (all must pass: a name that resolves to one public and one private address
 * could be answered either way) or saying why the name did not resolve.
 */
export async function checkedAddresses(url: URL, policy: EgressPolicy): Promise<string[]> {
  const host = bareHost(url)
  let addresses: string[]
  try {
    addresses = isIpAddress(host) ? [host] : await (policy.resolve ?? systemResolve)(host)
  } catch (error) {
    throw new EgressRefused(
      `${host} does not resolve (${(error as { code?: string }).code ?? (error as Error).message})`,
    )
  }
  if (addresses.length === 0) throw new EgressRefused(`${host} does not resolve`)
  if (!policy.allowPrivate) {
    for (const address of addresses) {
      const refusal = refusalOf(address)
      if (refusal !== null) {
        throw new EgressRefused(address === host ? refusal : resolvedTo(host, address))
      }
    }
  }
  return addresses
}

/** Why a name that resolved to `address` (refused) is refused, naming both. */
function resolvedTo(host: string, address: string): string {
  const what = isIpAddress(address) ? refusedAs(address) : null
  return what === null
    ? `${host} resolves to ${address}, which is not an IP address`
    : `${host} resolves to ${address}, which is not a global unicast address: ${what}`
}

/**
 * POSTs `body` to `url` at a checked address, within `timeoutMs`, following no redirect.
 * Throws EgressRefused (nothing sent), or the fetch's error (refused connection, TLS, timeout).
 */
export async function postTo(
  url: URL,
  body: string,
  headers: Record<string, string>,
  policy: EgressPolicy,
  timeoutMs: number,
  /** Ends the request early (the server is stopping). */
  cancel?: AbortSignal,
): Promise<EgressAnswer> {
  const [address] = await checkedAddresses(url, policy)
  const pinned = new URL(url)
  pinned.hostname = (address as string).includes(':') ? `[${address}]` : (address as string)
  const started = performance.now()
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = cancel === undefined ? timeout : AbortSignal.any([timeout, cancel])
  const response = await fetch(pinned, {
    method: 'POST',
    body,
    headers: { ...headers, host: url.host },
    redirect: 'manual',
    signal,
    // The certificate must be the URL's host's, though the connection is to its address.
    tls: url.protocol === 'https:' ? { serverName: bareHost(url), ca: policy.ca } : undefined,
    keepalive: false,
  })
  const kept = await startOf(response, signal)
  return { status: response.status, body: kept, ms: Math.round(performance.now() - started) }
}

/** Up to BODY_KEPT bytes of the answer's body, as text; the rest is not read. */
async function startOf(response: Response, signal: AbortSignal): Promise<string> {
  const reader = response.body?.getReader()
  if (reader === undefined) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    while (size < BODY_KEPT && !signal.aborted) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  const bytes = Buffer.concat(chunks).subarray(0, BODY_KEPT)
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes)
}
