import { SYSTEM } from '../../src/audit/events'
import type { TestApp } from './app'

export const PASSWORD = 'correct horse battery staple'

export const form = (fields: Record<string, string>) => ({
  body: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
})

export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** Creates a user with a password and signs in; returns the token and the cookie pair. */
export async function signedIn(t: TestApp, email = 'ada@example.com', password = PASSWORD) {
  const created = await t.post('/users', { name: 'Ada', email, password })
  const login = await t.call('POST', '/login', form({ email, password }))
  if (login.status !== 200) throw new Error(`login failed: ${login.text}`)
  const setCookie = login.headers.get('set-cookie') ?? ''
  return {
    userId: created.body.id as number,
    token: login.body.access_token as string,
    cookie: setCookie.split(';', 1)[0] as string,
    setCookie,
  }
}

export async function apiKey(t: TestApp, name = 'test'): Promise<string> {
  return (await t.deps.apiKeys.create({ name: name, scopes: ['*'] }, SYSTEM)).key
}
