import { Database } from 'bun:sqlite'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SYSTEM } from '../../src/audit/events'
import { testConfig } from '../../src/config'
import { memoryLogger } from '../../src/log'
import { startServer } from '../../src/server'
import { sqlitePath, tempDir } from '../helpers/app'
import { basic } from '../helpers/auth'

setDefaultTimeout(30_000)

describe('secrets stay secret', () => {
  test('no password, token, cookie or key appears in any answer or log line', async () => {
    using dir = tempDir()
    const diagnostics = memoryLogger()
    const server = await startServer(
      testConfig({
        dataDir: dir.path,
        logFile: join(dir.path, 'access.log'),
        usersAccess: 'protected',
      }),
      diagnostics,
    )
    const u = server.url
    const PASSWORD = 'Pw-Zq8Wj3Xk1-distinctive'
    const NEW_PASSWORD = 'Pw-Nn4Rr7Tt2-distinctive'
    const key = (await server.deps.apiKeys.create({ name: 'admin', scopes: ['*'] }, SYSTEM)).key
    const answers: string[] = []
    // Every answer is searched, except where a secret is handed out on purpose: the login body
    // (the token) and its Set-Cookie (the session).
    const send = async (path: string, init: RequestInit = {}, issues = false) => {
      const response = await fetch(`${u}${path}`, init)
      const text = await response.text()
      if (!issues) answers.push(text, JSON.stringify([...response.headers]))
      return { response, text }
    }
    const json = (body: unknown, headers: Record<string, string> = {}) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
    await send(
      '/users',
      json({ name: 'Ada', email: 'ada@example.com', password: PASSWORD }, { 'x-api-key': key }),
    )
    await send(
      '/users',
      json({ name: 'Bad', email: 'bad@example.com', password: 'short' }, { 'x-api-key': key }),
    )
    await send(
      '/users',
      json({ name: 'Bad', email: 'bad@example.com', password: [PASSWORD] }, { 'x-api-key': key }),
    )
    const login = await send(
      '/login',
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: 'ada@example.com', password: PASSWORD }).toString(),
      },
      true,
    )
    const token = JSON.parse(login.text).access_token as string
    const cookie = (login.response.headers.get('set-cookie') ?? '').split(';')[0] as string
    const sessionSecret = cookie.slice('session='.length)
    await send('/login', json({ email: 'ada@example.com', password: `${PASSWORD}-wrong` }))
    await send('/login', json({ email: 'ada@example.com', pass: PASSWORD, password: 12 }))
    await send('/me', { headers: { authorization: `Bearer ${token}` } })
    await send('/me', { headers: { cookie } })
    await send('/me', { headers: { authorization: `Bearer ${token}x` } })
    await send('/secure', { headers: { authorization: basic('ada@example.com', PASSWORD) } })
    await send('/secure', { headers: { authorization: basic('ada@example.com', `${PASSWORD}!`) } })
    await send(`/data?api_key=${key}`)
    await send(`/data?api_key=${key}x`)
    await send(`/users?api_key=${key}&limit=abc`)
    await send('/data', { headers: { 'x-api-key': key } })
    await send(`/data?api_key=${key}`, { headers: { 'x-api-key': `${key}y` } })
    await send('/users/1', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ password: NEW_PASSWORD }),
    })
    await send('/users/1', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ password: `${NEW_PASSWORD}${'x'.repeat(200)}` }),
    })
    await send('/api-keys', { headers: { 'x-api-key': key } })
    await send('/logout', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    await server.stop()

    const logs = [readFileSync(join(dir.path, 'access.log'), 'utf8'), ...diagnostics.lines].join(
      '\n',
    )
    const db = new Database(sqlitePath(server.deps), { readonly: true })
    const tables = db
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
    const database = JSON.stringify(
      tables.map(({ name }) => db.query(`SELECT * FROM "${name}"`).all()),
    )
    db.close()
    expect(database).toContain('$argon2id$')
    for (const secret of [PASSWORD, NEW_PASSWORD, token, sessionSecret, key]) {
      for (const answer of answers) expect(answer).not.toContain(secret)
      expect(logs).not.toContain(secret)
      expect(database).not.toContain(secret)
    }
    expect(logs.split('\n').filter((line) => line.includes('"route"')).length).toBeGreaterThan(15)
  })
})
