// Parsers for the values of flags and environment variables: each names the flag or variable
// and what it expected when the text is bad.
import type * as Net from 'node:net'

let net: typeof Net | undefined

/**
 * node:net, loaded the first time an address is checked (a --trust-proxy list, at start or per
 * request): a static import would cost every start about 3 ms, and most never use it.
 */
export function nodeNet(): typeof Net {
  net ??= require('node:net') as typeof Net
  return net
}

/** A bad flag or environment value; the CLI prints its message as one line and exits 2. */
export class ConfigError extends Error {}

export function invalid(source: string, text: string, expected: string): ConfigError {
  return new ConfigError(
    `invalid value for ${source}: ${JSON.stringify(text)} (expected ${expected})`,
  )
}

export function parseIntegerIn(text: string, source: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw invalid(source, text, `a whole number from ${min} to ${max}`)
  const value = Number(text)
  if (value < min || value > max)
    throw invalid(source, text, `a whole number from ${min} to ${max}`)
  return value
}

export function oneOf<const T extends string>(
  text: string,
  source: string,
  allowed: readonly T[],
): T {
  const lower = text.toLowerCase()
  const match = allowed.find((value) => value === lower)
  if (match === undefined) throw invalid(source, text, allowed.join(' or '))
  return match
}

const KIB = 1024
export const MIB = 1024 * KIB
export const GIB = 1024 * MIB
const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: KIB, mib: MIB, gib: GIB }

/** `1048576`, `512KiB`, `100MiB`, `1GiB` (case-insensitive, an optional space, whole numbers). */
export function parseSize(text: string, source: string): number {
  const match = /^([0-9]{1,15}) ?([a-z]*)$/i.exec(text.trim())
  const unit = SIZE_UNITS[(match?.[2] ?? 'x').toLowerCase()]
  const value = match === null || unit === undefined ? Number.NaN : Number(match[1]) * unit
  if (!Number.isSafeInteger(value) || value < 1) {
    throw invalid(source, text, 'a size in bytes, or with KiB, MiB or GiB, such as 100MiB')
  }
  return value
}

/**
 * Webhook signing secrets come from the environment only: a flag would show them to anyone
 * who can list processes.
 */
export function parseSecrets(text: string | undefined): readonly string[] {
  return Object.freeze(
    (text ?? '')
      .split(',')
      .map((secret) => secret.trim())
      .filter((secret) => secret !== ''),
  )
}

export function parseRate(text: string, source: string): number | null {
  if (text.toLowerCase() === 'off') return null
  const match = /^([0-9]{1,7})\/s$/.exec(text.trim())
  const rate = match === null ? Number.NaN : Number(match[1])
  if (!(rate >= 1 && rate <= 1_000_000)) {
    throw invalid(source, text, 'N/s with N from 1 to 1000000 (for example 50/s), or off')
  }
  return rate
}

export function parseBoolean(text: string, source: string): boolean {
  const lower = text.toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(lower)) return true
  if (['0', 'false', 'no', 'off'].includes(lower)) return false
  throw invalid(source, text, 'true or false')
}

export function parseOrigins(text: string, source: string): '*' | readonly string[] {
  const parts = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
  if (parts.length === 0 || (parts.length === 1 && parts[0] === '*')) return '*'
  return Object.freeze(
    parts.map((part) => {
      let url: URL
      try {
        url = new URL(part)
      } catch {
        throw invalid(source, part, 'origins such as https://app.example.com')
      }
      if (url.origin === 'null' || url.origin !== part.replace(/\/$/, '')) {
        throw invalid(
          source,
          part,
          'origins such as https://app.example.com (scheme and host only)',
        )
      }
      return url.origin
    }),
  )
}

const LOOPBACK_IPV4 = /^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/

/**
 * Whether a host name or address is loopback: `localhost`, 127.0.0.0/8 or ::1 (bracketed or
 * not). Only such an address is reachable from this machine alone.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase()
  return name === 'localhost' || name === '::1' || name === '[::1]' || LOOPBACK_IPV4.test(name)
}

const TRUST_PROXY_EXPECTED =
  'true (one proxy), a number of proxies, or their addresses and CIDR ranges such as 10.0.0.0/8,192.0.2.7'

/**
 * --trust-proxy: `true` (one hop), `false`/`0` (off), a hop count, or proxy addresses and CIDR
 * ranges, comma-separated.
 */
export function parseTrustProxy(
  text: string,
  source: string,
): { hops: number } | { proxies: readonly string[] } | null {
  const lower = text.trim().toLowerCase()
  if (['true', 'yes', 'on'].includes(lower)) return { hops: 1 }
  if (['false', 'no', 'off', '0'].includes(lower)) return null
  if (/^[0-9]+$/.test(lower)) return { hops: parseIntegerIn(lower, source, 1, 32) }
  const ranges = lower.split(',').map((part) => part.trim())
  for (const range of ranges) {
    const [address = '', prefix, extra] = range.split('/')
    const family = nodeNet().isIP(address)
    const maxPrefix = family === 6 ? 128 : 32
    const prefixOk =
      prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix)
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw invalid(source, text, TRUST_PROXY_EXPECTED)
    }
  }
  return { proxies: Object.freeze(ranges) }
}

const DURATION_UNITS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 60 * 60_000,
  d: 24 * 60 * 60_000,
}

/** A retention such as `90d`, `36h` or `30m`, in milliseconds (at least a minute). */
export function parseDuration(text: string, source: string): number {
  return parseDurationOf(text, source, 'mhd', 60_000)
}

/** A duration such as `3d`, `12h`, `30m` or `45s` (at least 10 seconds), in milliseconds. */
export function parseShortDuration(text: string, source: string): number {
  return parseDurationOf(text, source, 'smhd', 10_000)
}

/** A wait such as `45s` or `2m` (at least a second), in milliseconds. */
export function parseTimeout(text: string, source: string): number {
  return parseDurationOf(text, source, 'sm', 1000)
}

function parseDurationOf(text: string, source: string, units: string, minMs: number): number {
  const match = new RegExp(`^([0-9]{1,6}) ?([${units}])$`, 'i').exec(text.trim())
  const unit = DURATION_UNITS[(match?.[2] ?? '').toLowerCase()]
  const value = match === null || unit === undefined ? 0 : Number(match[1]) * unit
  if (value < minMs) {
    const example =
      units === 'sm' ? '45s or 2m' : units.includes('s') ? '3d, 12h or 45s' : '90d, 36h or 30m'
    throw invalid(source, text, `a duration such as ${example}`)
  }
  return value
}
