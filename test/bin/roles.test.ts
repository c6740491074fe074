import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const PASSWORD = 'correct horse battery'

async function call(url: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${url}${path}`, init)
  const text = await response.text()
  const json = response.headers.get('content-type')?.startsWith('application/json') ?? false
  return { status: response.status, body: json ? JSON.parse(text) : text }
}

describe('roles and scoped keys through the compiled binary', () => {
  test('the first admin from the command line signs in and does what a key does; scopes hold', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const admin = await runBinary(
      [
        'users',
        'create',
        '--role',
        'admin',
        '--name',
        'Ada',
        '--email',
        'ada@example.com',
        '--password-stdin',
        ...data,
      ],
      { stdin: `${PASSWORD}\n` },
    )
    expect(admin.code).toBe(0)
    expect(JSON.parse(admin.stdout)).toMatchObject({ id: 1, role: 'admin' })
    const member = await runBinary(
      ['users', 'create', '--name', 'Bo', '--email', 'bo@example.com', '--password-stdin', ...data],
      { stdin: `${PASSWORD}\n` },
    )
    expect(JSON.parse(member.stdout).role).toBe('member')
    const reader = await runBinary([
      'keys',
      'create',
      '--name',
      'reader',
      '--scope',
      'users:read',
      '--expires',
      '1d',
      ...data,
    ])
    expect(reader.stderr).toContain('scopes users:read, expires ')
    const readerKey = reader.stdout.trim()

    const server = await startBinary([...data, '--users-access', 'protected'])
    try {
      const signIn = async (email: string) => {
        const reply = await call(server.url, '/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: PASSWORD }),
        })
        return { authorization: `Bearer ${reply.body.access_token}` }
      }
      const asAda = await signIn('ada@example.com')
      const asBo = await signIn('bo@example.com')
      expect((await call(server.url, '/users', { headers: asAda })).body.pagination.total).toBe(2)
      const minted = await call(server.url, '/api-keys', {
        method: 'POST',
        headers: { ...asAda, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'scraper', scopes: ['metrics:read'] }),
      })
      expect(minted.body.scopes).toEqual(['metrics:read'])
      expect(
        (await call(server.url, '/metrics', { headers: { 'x-api-key': minted.body.key } })).status,
      ).toBe(200)

      const refused = await call(server.url, '/users', { headers: asBo })
      expect(refused.status).toBe(403)
      expect(refused.body.error.details[0]).toEqual({
        field: 'scope',
        message: 'users:read is required',
        received: 'role member',
      })
      expect((await call(server.url, '/users/2', { headers: asBo })).body.role).toBe('member')
      expect(
        (await call(server.url, '/users', { headers: { 'x-api-key': readerKey } })).status,
      ).toBe(200)
      const write = await call(server.url, '/users/2', {
        method: 'DELETE',
        headers: { 'x-api-key': readerKey },
      })
      expect(write.body.error.details[0].message).toBe('users:write is required')

      // Promoted on the command line while the server runs: Bo's token ends, a new one is admin.
      const promoted = await runBinary(['users', 'promote', 'bo@example.com', ...data])
      expect(JSON.parse(promoted.stdout).role).toBe('admin')
      expect((await call(server.url, '/me', { headers: asBo })).status).toBe(401)
      const asAdminBo = await signIn('bo@example.com')
      expect((await call(server.url, '/users', { headers: asAdminBo })).status).toBe(200)
      expect((await runBinary(['users', 'demote', '1', ...data])).code).toBe(0)
      const last = await runBinary(['users', 'demote', '2', ...data])
      expect(last).toMatchObject({
        code: 1,
        stderr: 'roster: User 2 is the last active admin; make another user an admin first\n',
      })

      // Deactivated on the command line: Bo's token ends and a sign-in is 403 until activated.
      expect((await runBinary(['users', 'promote', '1', ...data])).code).toBe(0)
      const off = await runBinary(['users', 'deactivate', 'bo@example.com', ...data])
      expect(JSON.parse(off.stdout)).toMatchObject({ id: 2, active: false })
      expect((await call(server.url, '/me', { headers: asAdminBo })).status).toBe(401)
      const refusedSignIn = await call(server.url, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bo@example.com', password: PASSWORD }),
      })
      expect(refusedSignIn.status).toBe(403)
      const lastActive = await runBinary(['users', 'deactivate', '1', ...data])
      expect(lastActive.stderr).toBe(
        'roster: User 1 is the last active admin; make another user an admin first\n',
      )
      expect(JSON.parse((await runBinary(['users', 'activate', '2', ...data])).stdout).active).toBe(
        true,
      )
      expect(
        (await call(server.url, '/me', { headers: await signIn('bo@example.com') })).status,
      ).toBe(200)
    } finally {
      await server.stop()
    }
  })

  test('bad --role, --scope and --expires are one line each and exit 2', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    for (const [args, said] of [
      [['users', 'create', '--role', 'root', '--name', 'X', '--email', 'x@example.com'], '--role'],
      [['keys', 'create', '--name', 'k', '--scope', 'users:admin'], '--scope'],
      [['keys', 'create', '--name', 'k', '--expires', 'yesterday'], '--expires'],
      [['keys', 'create', '--name', 'k', '--expires', '2001-01-01T00:00:00Z'], '--expires'],
    ] as const) {
      const result = await runBinary([...args, ...data])
      expect({ code: result.code, lines: result.stderr.trim().split('\n').length }).toEqual({
        code: 2,
        lines: 1,
      })
      expect(result.stderr).toContain(said)
    }
    expect((await runBinary(['keys', 'list', '--json', ...data])).stdout.trim()).toBe('[]')
    const help = await runBinary(['users', '--help'])
    expect(help.stdout).toContain('roster users promote ID|EMAIL')
    expect(help.stdout).toContain('roster users deactivate ID|EMAIL')
    expect((await runBinary(['keys', '--help'])).stdout).toContain('--scope <SCOPE>…')
  })
})
