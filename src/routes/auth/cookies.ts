import type { Cookie } from 'elysia'
import { SESSION_TTL_MS } from '../../auth/sessions'

export const SESSION_COOKIE = 'session'

/** The session cookie from Elysia's jar (which creates one on access, so it is always there). */
export function sessionCookie(jar: Record<string, Cookie<unknown>>): Cookie<unknown> {
  return jar[SESSION_COOKIE] as Cookie<unknown>
}

/**
 * The session cookie's attributes, written once: sign-in sets them, sign-out repeats them
 * expired, a renewal sends them again (Secure is added when --secure-cookies asks).
 */
export const SESSION_COOKIE_ATTRIBUTES = {
  httpOnly: true,
  sameSite: 'lax',
  path: '/',
  maxAge: SESSION_TTL_MS / 1000,
} as const

/** Sets the session cookie: HttpOnly, SameSite=Lax, Path=/, seven days, Secure when asked. */
export function writeSessionCookie(cookie: Cookie<unknown>, token: string, secure: boolean): void {
  cookie.set({ value: token, ...SESSION_COOKIE_ATTRIBUTES, secure })
}

/** Tells the browser to forget the session cookie (same attributes, expired). */
export function clearSessionCookie(cookie: Cookie<unknown>, secure: boolean): void {
  cookie.set({ value: '', ...SESSION_COOKIE_ATTRIBUTES, maxAge: 0, secure })
}

const SESSION_VALUE = new RegExp(`(?:^|;\\s*)${SESSION_COOKIE}=([^;]*)`)

/** Whether a Cookie header carries the session cookie (with any value). */
export function hasSessionCookie(header: string | null): boolean {
  return header !== null && SESSION_VALUE.test(header)
}

/** The session cookie's value from a Cookie header, or null. */
export function sessionFromCookieHeader(header: string | null): string | null {
  if (header === null) return null
  const value = SESSION_VALUE.exec(header)?.[1]?.trim()
  return value === undefined || value === '' ? null : value
}

/** The attributes as Set-Cookie spells them (made once: a renewal is on the request path). */
function setCookieAttributes(secure: boolean): string {
  const { maxAge, path, httpOnly, sameSite } = SESSION_COOKIE_ATTRIBUTES
  const flags = [`Max-Age=${maxAge}`, `Path=${path}`]
  if (httpOnly) flags.push('HttpOnly')
  if (secure) flags.push('Secure')
  flags.push(`SameSite=${sameSite[0]?.toUpperCase()}${sameSite.slice(1)}`)
  return `; ${flags.join('; ')}`
}

const SET_COOKIE_ATTRIBUTES = {
  plain: setCookieAttributes(false),
  secure: setCookieAttributes(true),
}

/**
 * The Set-Cookie value for a renewed session, the same as writeSessionCookie produces; the
 * auth hook writes it directly because it does not ask Elysia for the cookie jar.
 */
export function sessionCookieHeader(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}${secure ? SET_COOKIE_ATTRIBUTES.secure : SET_COOKIE_ATTRIBUTES.plain}`
}
