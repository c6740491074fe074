import { expect } from 'bun:test'
import { join } from 'node:path'
import { ENTERPRISE_SCHEMA } from '../../src/scim/names'
import { PASSWORD } from './auth'
import { runBinary, startBinary } from './binary'

// `roster users export` into `roster users import` through the compiled binary, on whichever
// database the flags name: the same steps for SQLite (test/bin) and PostgreSQL (test/postgres).

/** The lines of an export with their ids taken out: a fresh database gives its own. */
export const withoutIds = (text: string) =>
  text.replace(/^\{"id":\d+,/gm, '{').replace(/^\d+,/gm, '')

async function call(
  url: string,
  path: string,
  init: { method?: string; key: string; json?: unknown; scim?: boolean },
) {
  const response = await fetch(`${url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.scim === true
        ? { authorization: `Bearer ${init.key}`, 'content-type': 'application/scim+json' }
        : { 'x-api-key': init.key, 'content-type': 'application/json' }),
    },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? null : JSON.parse(text) }
}

/**
 * Fills a roster, through the server and the CLI as an operator would, with one of everything
 * a user record holds: an admin with a password and a verified address, a deactivated member
 * in two groups, a user an identity provider provisioned through SCIM (username, externalId,
 * name parts, a second email, enterprise fields) in one group, and one provisioned with nothing
 * but a userName.
 */
export async function fillRoster(flags: string[]): Promise<void> {
  const key = (await runBinary(['keys', 'create', '--name', 'fill', ...flags])).stdout.trim()
  const server = await startBinary(flags)
  try {
    const { url } = server
    const post = (path: string, json: unknown, scim = false) =>
      call(url, path, { method: 'POST', key, json, scim })
    const admin = await post('/users', {
      name: 'Ada',
      email: 'ada@example.com',
      password: PASSWORD,
      role: 'admin',
    })
    expect(admin.status).toBe(201)
    expect((await post('/auth/verify-email/request', { email: 'ada@example.com' })).status).toBe(
      202,
    )
    const mail = (await runBinary(['mail', 'list', ...flags])).stdout
    const token = /token=(rat_[A-Za-z0-9_-]+)/.exec(mail)?.[1]
    expect((await post('/auth/verify-email/confirm', { token })).status).toBe(200)
    const bo = await post('/users', {
      name: 'Bo, "B"',
      email: 'bo@example.com',
      password: PASSWORD,
    })
    const patched = await call(url, `/users/${bo.body.id}`, {
      method: 'PATCH',
      key,
      json: { active: false },
    })
    expect(patched.status).toBe(200)
    // A user deleted: the ids that follow have a gap that --keep-ids keeps.
    const gone = await post('/users', { name: 'Gone', email: 'gone@example.com' })
    expect((await call(url, `/users/${gone.body.id}`, { method: 'DELETE', key })).status).toBe(200)
    const grace = await post(
      '/scim/v2/Users',
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE_SCHEMA],
        userName: 'grace.h',
        externalId: 'okta-00u1',
        name: { givenName: 'Grace', familyName: 'Hopper', formatted: 'Grace B. Hopper' },
        displayName: '=Grace Hopper',
        emails: [
          { value: 'grace@example.com', type: 'work', primary: true },
          { value: 'grace@home.example', type: 'home' },
        ],
        [ENTERPRISE_SCHEMA]: { department: 'Navy', employeeNumber: '7', manager: { value: 'm-1' } },
      },
      true,
    )
    expect(grace.status).toBe(201)
    const cy = await post(
      '/scim/v2/Users',
      { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'cy@example.com' },
      true,
    )
    expect(cy.status).toBe(201)
    const groups: number[] = []
    for (const name of ['Engineering', 'Ops'])
      groups.push((await post('/groups', { name })).body.id)
    for (const [group, user] of [
      [groups[0], bo.body.id],
      [groups[1], bo.body.id],
      [groups[1], grace.body.id],
    ]) {
      const joined = await call(url, `/groups/${group}/members/${user}`, { method: 'PUT', key })
      expect(joined.status).toBe(200)
    }
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

/**
 * Exports `from` with password hashes, imports the file into `to` (a fresh database) with the
 * import's `options`, exports `to` the same way: answers both exports, for the caller to compare.
 */
export async function moveRoster(
  from: string[],
  to: string[],
  file: string,
  options: string[] = [],
) {
  const exported = await runBinary(['users', 'export', '--with-password-hashes', ...from])
  expect(exported.stderr).toBe('exported 4 users (jsonl)\n')
  expect(exported.code).toBe(0)
  await Bun.write(file, exported.stdout)
  const imported = await runBinary(['users', 'import', file, ...options, ...to])
  expect(imported.stderr).not.toContain('line ')
  expect(imported.stdout).toMatch(/^imported 4 users in [0-9.]+ s\n$/)
  const again = await runBinary(['users', 'export', '--with-password-hashes', ...to])
  expect(again.code).toBe(0)
  return { first: exported.stdout, second: again.stdout }
}

/** The moved roster answers as the first did: the admin signs in and is an admin. */
export async function expectAdminSignsIn(flags: string[]): Promise<void> {
  const server = await startBinary(flags)
  try {
    const login = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }),
    })
    expect(login.status).toBe(200)
    const { access_token: token } = (await login.json()) as { access_token: string }
    const me = await fetch(`${server.url}/me`, { headers: { authorization: `Bearer ${token}` } })
    expect(await me.json()).toMatchObject({ role: 'admin', email_verified_at: expect.any(String) })
    // Deactivated on the first roster, still deactivated here.
    const refused = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bo@example.com', password: PASSWORD }),
    })
    expect(refused.status).not.toBe(200)
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

export const exportFile = (dir: string) => join(dir, 'users.jsonl')
