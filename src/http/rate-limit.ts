import type { TrustProxy } from '../config'
import { AppError } from '../errors/errors'
import { clientIp } from './client'
import type { RequestStep } from './pipeline'
import { pathOf } from './route-table'

/** Clients tracked at most; beyond that idle ones, then the oldest, are dropped. */
const MAX_CLIENTS = 100_000
/** Monitoring must see the service whatever a client has spent. */
const EXEMPT = /^(?:\/v[12])?\/health(?:\/live|\/ready)?\/?$|^\/metrics\/?$/

export interface Decision {
  allowed: boolean
  /** Whole requests left in the bucket after this one. */
  remaining: number
  /** Seconds until the bucket is full again. */
  resetS: number
  /** Seconds until the next request would be allowed (when this one was not). */
  retryAfterS: number
}

interface Bucket {
  tokens: number
  at: number
}

/**
 * One token bucket per key: `rate` tokens a second, holding at most `burst`. A request takes a
 * token; without one it is refused. A full bucket is the same as none, so idle clients cost
 * nothing once swept.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    readonly rate: number,
    readonly burst: number,
    private readonly now: () => number,
  ) {}

  take(key: string): Decision {
    const at = this.now()
    let bucket = this.buckets.get(key)
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_CLIENTS) this.sweep(at)
      bucket = { tokens: this.burst, at }
      this.buckets.set(key, bucket)
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + ((at - bucket.at) * this.rate) / 1000)
      bucket.at = at
    }
    const allowed = bucket.tokens >= 1
    if (allowed) bucket.tokens -= 1
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      resetS: Math.ceil((this.burst - bucket.tokens) / this.rate),
      retryAfterS: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate)),
    }
  }

  get size(): number {
    return this.buckets.size
  }

  /** Drops the buckets that have refilled; if that is not enough, the oldest tenth. */
  private sweep(at: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((at - bucket.at) * this.rate) / 1000 >= this.burst) {
        this.buckets.delete(key)
      }
    }
    if (this.buckets.size < MAX_CLIENTS) return
    let drop = Math.ceil(MAX_CLIENTS / 10)
    for (const key of this.buckets.keys()) {
      if (drop-- === 0) break
      this.buckets.delete(key)
    }
  }
}

/**
 * `--rate-limit N/s`: N requests a second per client IP with bursts of N, on every route but
 * /health and /metrics. Every limited answer carries RateLimit-Limit, RateLimit-Remaining,
 * RateLimit-Reset and RateLimit-Policy; a refusal is 429 RATE_LIMITED with Retry-After. The
 * client IP comes from X-Forwarded-For only as far as --trust-proxy says (http/client.ts).
 */
export function rateLimit(
  perSecond: number | null,
  trustProxy: TrustProxy,
  now: () => number = Date.now,
): RequestStep | null {
  if (perSecond === null) return null
  const buckets = new TokenBuckets(perSecond, perSecond, now)
  const limit = String(perSecond)
  const policy = `${perSecond};w=1`
  return function limitRate(request, set, server) {
    if (EXEMPT.test(pathOf(request.url))) return
    const decision = buckets.take(clientIp(request, server, trustProxy))
    set.headers['ratelimit-limit'] = limit
    set.headers['ratelimit-remaining'] = String(decision.remaining)
    set.headers['ratelimit-reset'] = String(decision.resetS)
    set.headers['ratelimit-policy'] = policy
    if (!decision.allowed) {
      throw new AppError('RATE_LIMITED', `Over ${perSecond} requests a second; slow down`, [], {
        'retry-after': String(decision.retryAfterS),
      })
    }
  }
}
