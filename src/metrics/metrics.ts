import { registerProcessMetrics } from './process'
import { Counter, escapeLabel, Gauge, Registry } from './registry'

/** Seconds; from half a millisecond (a cached read) to 10 s (the shutdown cap). */
export const DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** The route label of a request that matched no route: paths must never become labels. */
export const UNMATCHED_ROUTE = 'unmatched'

interface RouteStats {
  /** Count per `${method} ${status}`. */
  answers: Map<string, number>
  /** Per bucket (the last is +Inf), not cumulative. */
  buckets: Float64Array
  sum: number
  count: number
}

/**
 * roster_http_requests_total{method,route,status} and roster_http_request_duration_seconds
 * {route}, kept per route in one structure: recording an answer is two map lookups.
 */
class HttpMetrics {
  private readonly routes = new Map<string, RouteStats>()

  record(method: string, route: string, status: number, seconds: number): void {
    let stats = this.routes.get(route)
    if (stats === undefined) {
      stats = {
        answers: new Map(),
        buckets: new Float64Array(DURATION_BUCKETS.length + 1),
        sum: 0,
        count: 0,
      }
      this.routes.set(route, stats)
    }
    const key = `${KNOWN_METHODS.has(method) ? method : 'OTHER'} ${status}`
    stats.answers.set(key, (stats.answers.get(key) ?? 0) + 1)
    let bucket = 0
    while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] as number)) {
      bucket++
    }
    stats.buckets[bucket] = (stats.buckets[bucket] as number) + 1
    stats.sum += seconds
    stats.count += 1
  }

  /** Answers counted for a route (for tests). */
  count(route: string, method: string, status: number): number {
    return this.routes.get(route)?.answers.get(`${method} ${status}`) ?? 0
  }

  render(): string {
    const requests = 'roster_http_requests_total'
    const duration = 'roster_http_request_duration_seconds'
    let counts = `# HELP ${requests} HTTP requests answered, by method, route template and status.\n# TYPE ${requests} counter\n`
    let histograms = `# HELP ${duration} Time from a request's arrival to its answer, by route template.\n# TYPE ${duration} histogram\n`
    for (const [route, stats] of this.routes) {
      const label = `route="${escapeLabel(route)}"`
      for (const [key, count] of stats.answers) {
        const [method, status] = key.split(' ')
        counts += `${requests}{method="${method}",${label},status="${status}"} ${count}\n`
      }
      let cumulative = 0
      for (let i = 0; i <= DURATION_BUCKETS.length; i++) {
        cumulative += stats.buckets[i] as number
        const le = i < DURATION_BUCKETS.length ? String(DURATION_BUCKETS[i]) : '+Inf'
        histograms += `${duration}_bucket{${label},le="${le}"} ${cumulative}\n`
      }
      histograms += `${duration}_sum{${label}} ${stats.sum}\n${duration}_count{${label}} ${stats.count}\n`
    }
    return counts + histograms
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/**
 * The metrics GET /metrics serves (contract section 8): HTTP answers by route template,
 * uploads, webhook events, and the process. Row counts are added by makeDeps as gauges.
 */
export function createMetrics(version: string) {
  const registry = new Registry()
  const http = registry.add(new HttpMetrics())
  const uploads = registry.add(
    new Counter('roster_uploads_total', 'Uploads stored (each successful POST /upload).'),
  )
  const uploadFiles = registry.add(
    new Counter('roster_upload_files_total', 'Files stored by uploads.'),
  )
  const uploadBytes = registry.add(
    new Counter('roster_upload_bytes_total', 'Bytes of the files stored by uploads.'),
  )
  const webhookEvents = registry.add(
    new Counter(
      'roster_webhook_events_total',
      'Webhook deliveries by scheme and what became of them: received (stored), duplicate, rejected (refused before storing), then processed, ignored or failed (each handling attempt).',
      ['scheme', 'status'],
    ),
  )
  const dbCommits = registry.add(
    new Counter(
      'roster_db_commits_total',
      'Group-commit transactions committed (one fsync each at --sync full).',
    ),
  )
  const dbWrites = registry.add(
    new Counter(
      'roster_db_writes_total',
      'Writes committed; divided by roster_db_commits_total, the mean writes per commit.',
    ),
  )
  registry.add(
    new Gauge('roster_build_info', 'The running version of roster.', () => 1, { version }),
  )
  registerProcessMetrics(registry)
  return {
    registry,
    http,
    uploads,
    uploadFiles,
    uploadBytes,
    webhookEvents,
    dbCommits,
    dbWrites,
    /** A group commit of this many writes. */
    committed(writes: number): void {
      dbCommits.inc()
      dbWrites.inc({}, writes)
    },
    /** An upload that was stored, with its files. */
    uploadStored(files: readonly { size: number }[]): void {
      uploads.inc()
      uploadFiles.inc({}, files.length)
      uploadBytes.inc(
        {},
        files.reduce((total, file) => total + file.size, 0),
      )
    },
    render: () => registry.render(),
  }
}
