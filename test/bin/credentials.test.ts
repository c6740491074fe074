import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { basic } from '../helpers/auth'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

describe('credentials through the compiled binary', () => {
  test('keys CLI, users create --password-stdin, and every scheme against the server', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]

    const created = await runBinary(['keys', 'create', '--name', 'ci', ...data])
    expect(created.code).toBe(0)
    const key = created.stdout.trim()
    expect(created.stdout).toMatch(/^rk_[A-Za-z0-9_-]{43}\n$/)
    // A new data dir: first the notice that a database was made, then what was created.
    const [notice, what] = created.stderr.split('\n')
    expect(notice).toStartWith('roster: there was no database at ')
    expect(what).toStartWith('created API key 1 ')
    const list = await runBinary(['keys', 'list', ...data])
    expect(list.stdout).toContain('ci')
    expect(list.stdout).not.toContain(key)

    const user = await runBinary(
      [
        'users',
        'create',
        '--name',
        'Ada',
        '--email',
        'ada@example.com',
        '--password-stdin',
        ...data,
      ],
      {
        stdin: 'correct horse battery\n',
      },
    )
    expect(user.code).toBe(0)
    expect(JSON.parse(user.stdout)).toMatchObject({ id: 1, email: 'ada@example.com' })
    const duplicate = await runBinary([
      'users',
      'create',
      '--name',
      'Ada',
      '--email',
      'ADA@example.com',
      ...data,
    ])
    expect(duplicate).toMatchObject({
      code: 1,
      stderr: 'roster: A user with this email already exists\n',
    })

    const server = await startBinary([...data, '--users-access', 'protected', '--host', '0.0.0.0'])
    try {
      expect(JSON.parse(server.stderr[0] as string).users_access).toBe('protected')
      expect(server.stderr.some((line) => line.includes('/users open'))).toBe(false)
      const url = server.url.replace('0.0.0.0', '127.0.0.1')
      const login = await fetch(`${url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'username=ada%40example.com&password=correct+horse+battery',
      })
      expect(login.status).toBe(200)
      const { access_token: token } = (await login.json()) as { access_token: string }
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string
      expect(
        (await fetch(`${url}/me`, { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(200)
      expect((await fetch(`${url}/v1/me`, { headers: { cookie } })).status).toBe(200)
      expect(
        (
          await fetch(`${url}/secure`, {
            headers: { authorization: basic('ada@example.com', 'correct horse battery') },
          })
        ).status,
      ).toBe(200)
      expect((await fetch(`${url}/data`, { headers: { 'x-api-key': key } })).status).toBe(200)
      expect((await fetch(`${url}/v2/data?api_key=${key}`)).status).toBe(200)
      expect((await fetch(`${url}/users`)).status).toBe(401)
      expect((await fetch(`${url}/users`, { headers: { 'x-api-key': key } })).status).toBe(200)

      expect((await runBinary(['keys', 'revoke', '1', ...data])).code).toBe(0)
      const refused = await fetch(`${url}/data`, { headers: { 'x-api-key': key } })
      expect(refused.status).toBe(401)
      expect(refused.headers.get('www-authenticate')).toStartWith('ApiKey')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('the login limiter through the compiled binary', () => {
  test('100 concurrent wrong sign-ins over real connections (form and Basic): at most 10 checked', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    try {
      const created = await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', email: 'ada@example.com', password: 'right password' }),
      })
      expect(created.status).toBe(201)
      const guesses = Array.from({ length: 100 }, (_, i) =>
        i % 2 === 0
          ? fetch(`${server.url}/login`, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: `email=ada%40example.com&password=wrong${i}`,
            })
          : fetch(`${server.url}/secure`, {
              headers: { authorization: basic('ada@example.com', `wrong${i}`) },
            }),
      )
      const statuses = (await Promise.all(guesses)).map((reply) => reply.status)
      expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(10)
      expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(90)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})
