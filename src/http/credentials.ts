import type { RequestStep } from './pipeline'

export const NO_STORE = 'no-store'

/**
 * Marks the answer to a request that presents a credential (an Authorization header, an API key
 * in the header or the query, the session cookie) `Cache-Control: no-store`: it is the caller's
 * own business, and no cache may keep it (section 11). A route may still set its own value.
 * `hasSession` tells whether a Cookie header holds the session cookie (auth knows its name).
 */
export function noStoreForCredentials(hasSession: (cookie: string | null) => boolean): RequestStep {
  return function markPrivate(request, set) {
    const headers = request.headers
    const url = request.url
    const query = url.indexOf('?')
    if (
      headers.has('authorization') ||
      headers.has('x-api-key') ||
      (query !== -1 && url.includes('api_key=', query)) ||
      hasSession(headers.get('cookie'))
    ) {
      set.headers['cache-control'] = NO_STORE
    }
  }
}
