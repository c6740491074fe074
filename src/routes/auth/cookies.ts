import type { Cookie } from 'elysia'
import { SESSION_TTL_MS } from '../../auth/sessions'

export const SESSION_COOKIE = 'session'

/** The session cookie from Elysia's jar (which creates one on access, so it is always there). */
export function sessionCookie(jar: Record<string, Cookie<unknown>>): Cookie<unknown> {
  return jar[SESSION_COOKIE] as Cookie<unknown>
}

/** Sets the session cookie: HttpOnly, SameSite=Lax, Path=/, seven days, Secure when asked. */
export function writeSessionCookie(cookie: Cookie<unknown>, token: string, secure: boolean): void {
  cookie.set({
    value: token,
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    maxAge: SESSION_TTL_MS / 1000,
    secure,
  })
}

/** Tells the browser to forget the session cookie (same attributes, expired). */
export function clearSessionCookie(cookie: Cookie<unknown>, secure: boolean): void {
  cookie.set({ value: '', httpOnly: true, sameSite: 'lax', path: '/', maxAge: 0, secure })
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

/**
 * The Set-Cookie value for a renewed session, the same as writeSessionCookie produces; the
 * auth hook writes it directly because it does not ask Elysia for the cookie jar.
 */
export function sessionCookieHeader(token: string, secure: boolean): string {
  const attributes = `; Max-Age=${SESSION_TTL_MS / 1000}; Path=/; HttpOnly${secure ? '; Secure' : ''}; SameSite=Lax`
  return `${SESSION_COOKIE}=${token}${attributes}`
}
