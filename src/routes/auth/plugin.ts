import type { Context } from 'elysia'
import { Elysia } from 'elysia'
import {
  type Authenticated,
  type Authenticator,
  type Presented,
  unauthorized,
} from '../../auth/authenticator'
import type { Principal } from '../../auth/principal'
import type { Config } from '../../config'
import { badRequest } from '../../errors/errors'
import { cameOverTls, clientIp } from '../../http/client'
import { type AuthRequirement, authorise } from '../authorisation'
import { sessionCookieHeader, sessionFromCookieHeader } from './cookies'
import { requestIdOf, setPrincipal } from './principal'

export type { AuthRequirement }

/** Whether a cookie set for this request should carry `Secure`. */
export type CookieSecurity = Pick<Config, 'cookieSecure' | 'trustProxy'>

/**
 * The `auth` macro: `{ auth: { schemes: ['bearer', 'session'] } }` authenticates the request
 * before its body is validated (so a caller without credentials gets 401, not 422) and leaves
 * the principal for `principalOf(set)`. Made once by the composition root and handed to every
 * route module that takes credentials.
 */
export function authPlugin(authenticator: Authenticator, config: CookieSecurity) {
  /** Checks the outcome and leaves the principal (and a renewed cookie) for the route. */
  const settle = (
    result: Authenticated,
    requirement: AuthRequirement,
    request: Request,
    set: Context['set'],
    ipOf: () => string,
  ) => {
    // Read as own properties only: a decision to let a caller in must never come from a
    // property something put on Object.prototype (CONTRACT section 17).
    if (result.principal === null && !isOptional(requirement)) {
      throw unauthorized(requirement.schemes, 'This route needs credentials')
    }
    const rule = Object.hasOwn(requirement, 'rule') ? requirement.rule : undefined
    if (result.principal !== null && rule !== undefined) authorise(result.principal, rule)
    setPrincipal(set, result.principal, ipOf)
    if (result.renewedSession !== undefined) {
      set.headers['set-cookie'] = sessionCookieHeader(
        result.renewedSession,
        isSecure(request, config),
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
            () => ({ ip: ipOf(), requestId: requestIdOf(set) }),
          )
          settle(result, requirement, request, set, ipOf)
        },
      }
    },
  })
}

/** Whether anonymous callers are let through: only when the requirement itself says so. */
function isOptional(requirement: AuthRequirement): boolean {
  return Object.hasOwn(requirement, 'optional') && requirement.optional === true
}

/** Whether the session cookie should carry `Secure`. */
export function isSecure(request: Request, config: CookieSecurity): boolean {
  return config.cookieSecure || cameOverTls(request, config.trustProxy)
}

export type AuthPlugin = ReturnType<typeof authPlugin>

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
