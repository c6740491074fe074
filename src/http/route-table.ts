/** A route as Elysia lists it in `app.routes`. */
export interface RouteEntry {
  method: string
  path: string
}

export interface RouteMatch {
  /** The path template, such as `/v2/users/:id`: used as the route label in logs and metrics. */
  template: string
  /** Every method the path answers, HEAD and OPTIONS included, for `Allow`. */
  methods: readonly string[]
}

interface PatternRoute extends RouteMatch {
  pattern: RegExp
}

/**
 * Which methods each path answers. Elysia itself answers a known path with an unknown method
 * by 404; this table lets the error handler answer 405 with `Allow`, OPTIONS answer with
 * `Allow`, and logs and metrics name the route template instead of the raw path.
 */
export class RouteTable {
  private readonly exact = new Map<string, RouteMatch>()
  private readonly patterns: PatternRoute[] = []

  /** Replaces the table's content; called once the app has all its routes. */
  load(routes: readonly RouteEntry[]): void {
    this.exact.clear()
    this.patterns.length = 0
    const byPath = new Map<string, Set<string>>()
    for (const route of routes) {
      // The catch-all routes (OPTIONS, and the 404/405 fallback) answer for the others.
      if (route.path === '/*') continue
      const methods = byPath.get(route.path) ?? new Set<string>()
      methods.add(route.method.toUpperCase())
      byPath.set(route.path, methods)
    }
    for (const [template, methods] of byPath) {
      // HEAD comes with GET, but not under SCIM, which defines no HEAD (RFC 7644) and refuses it.
      if (methods.has('GET') && !template.startsWith('/scim/')) methods.add('HEAD')
      methods.add('OPTIONS')
      const match = { template, methods: sortMethods(methods) }
      if (template.includes(':') || template.includes('*')) {
        this.patterns.push({ ...match, pattern: templateToPattern(template) })
      } else {
        this.exact.set(template, match)
      }
    }
  }

  /** The route for a request path (no query string), or null when no route has that path. */
  match(pathname: string): RouteMatch | null {
    const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname
    const exact = this.exact.get(path)
    if (exact !== undefined) return exact
    for (const route of this.patterns) if (route.pattern.test(path)) return route
    return null
  }
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

function sortMethods(methods: Set<string>): string[] {
  return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
}

function rank(method: string): number {
  const index = METHOD_ORDER.indexOf(method)
  return index === -1 ? METHOD_ORDER.length : index
}

function templateToPattern(template: string): RegExp {
  const source = template
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*'
      if (segment.startsWith(':')) return '[^/]+'
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('/')
  return new RegExp(`^${source}$`)
}

/**
 * The path of a request URL, without scheme, host or query, and without parsing a URL object.
 * (A request without a Host header, HTTP/1.0, reaches roster as a bare path.)
 */
export function pathOf(url: string): string {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const query = url.indexOf('?', start)
  return query === -1 ? url.slice(start) : url.slice(start, query)
}
