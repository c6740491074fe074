import type { Context } from 'elysia'
import { Elysia } from 'elysia'
import type { Deps } from '../deps'
import { badRequest } from '../errors/errors'
import { cameOverTls, clientIp } from '../http/client'
import { type Authenticated, type Presented, unauthorized } from './authenticator'
import { sessionCookieHeader, sessionFromCookieHeader } from './cookies'
import { type Principal, type Scheme, setPrincipal } from './principal'

export interface AuthRequirement {
  schemes: readonly Scheme[]
  /** Anonymous callers are let through (the route decides what they may do). */
  optional?: boolean
}

const plugins = new WeakMap<Deps, ReturnType<typeof createAuthPlugin>>()

/**
 * The `auth` macro: `{ auth: { schemes: ['bearer', 'session'] } }` authenticates the request
 * before its body is validated (so a caller without credentials gets 401, not 422) and leaves
 * the principal for `principalOf(set)`. One instance per deps, so every route module can use it.
 */
export function authPlugin(deps: Deps) {
  let plugin = plugins.get(deps)
  if (plugin === undefined) {
    plugin = createAuthPlugin(deps)
    plugins.set(deps, plugin)
  }
  return plugin
}

function createAuthPlugin(deps: Deps) {
  const { config, authenticator } = deps

  /** Checks the outcome and leaves the principal (and a renewed cookie) for the route. */
  const settle = (
    result: Authenticated,
    requirement: AuthRequirement,
    request: Request,
    set: Context['set'],
  ) => {
    if (result.principal === null && requirement.optional !== true) {
      throw unauthorized(requirement.schemes, 'This route needs credentials')
    }
    setPrincipal(set, result.principal)
    if (result.renewedSession !== undefined) {
      set.headers['set-cookie'] = sessionCookieHeader(
        result.renewedSession,
        isSecure(request, deps),
      )
    }
  }

  // The session cookie is read from the header here, not from Elysia's cookie jar: asking for
  // the jar makes Elysia build it on every request of every route that takes credentials.
  return new Elysia({ name: 'auth' }).macro({
    auth(requirement: AuthRequirement) {
      return {
        async transform({ request, set, server }) {
          const ipOf = () => clientIp(request, server, config.trustProxy)
          const result = await authenticator.authenticate(
            presentedCredentials(request),
            requirement.schemes,
            ipOf,
          )
          settle(result, requirement, request, set)
        },
      }
    },
  })
}

/** Whether the session cookie should carry `Secure`. */
export function isSecure(request: Request, deps: Deps): boolean {
  return deps.config.cookieSecure || cameOverTls(request, deps.config.trustProxy)
}

function presentedCredentials(request: Request): Presented {
  const url = request.url
  const headers = request.headers
  return {
    authorization: headers.get('authorization'),
    apiKeyHeader: headers.get('x-api-key'),
    apiKeyQuery: url.includes('api_key=') ? apiKeyFromQuery(url) : null,
    sessionCookie: sessionFromCookieHeader(headers.get('cookie')),
  }
}

/** `?api_key=`; given twice with different values it is a BAD_REQUEST. */
function apiKeyFromQuery(url: string): string | null {
  const values = new URL(url).searchParams.getAll('api_key')
  if (values.length === 0) return null
  if (values.some((value) => value !== values[0])) {
    throw badRequest('api_key was given more than once, with different values')
  }
  return values[0] as string
}

export type { Principal }
