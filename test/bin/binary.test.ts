import { Database } from 'bun:sqlite'
import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary, waitForStderr } from '../helpers/binary'

const NO_STACK = /^\s+at |\.ts:\d+|node_modules|\$bunfs/m

setDefaultTimeout(30_000)
beforeAll(requireBinary)

describe('roster (the compiled binary)', () => {
  test('--version and --help', async () => {
    using cwd = tempDir()
    const version = await runBinary(['--version'], { cwd: cwd.path })
    expect(version).toMatchObject({
      code: 0,
      // The version, the commit, the build date and the target it was built for.
      stdout: expect.stringMatching(
        /^roster \d+\.\d+\.\d+ \(commit [0-9a-f]{12}(-dirty)?, built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, bun-linux-x64\)\n$/,
      ),
    })
    const help = await runBinary(['--help'], { cwd: cwd.path })
    expect(help.code).toBe(0)
    for (const word of [
      'serve',
      'migrate',
      'openapi',
      '--port',
      'ROSTER_PORT',
      '--data-dir',
      '--sync',
    ]) {
      expect(help.stdout).toContain(word)
    }
    const serveHelp = await runBinary(['serve', '--help'], { cwd: cwd.path })
    expect(serveHelp.stdout).toContain('ROSTER_DATA_DIR')
  })

  test('each command’s --help lists every flag with its env var and default', async () => {
    const { SERVE_OPTIONS } = await import('../../src/config')
    const flat = (text: string) => text.replace(/\s+/g, ' ')
    const serve = flat((await runBinary(['serve', '--help'])).stdout)
    for (const spec of SERVE_OPTIONS) {
      expect(serve).toContain(`--${spec.flag}`)
      for (const env of spec.env) expect(serve).toContain(env)
      expect(serve).toContain(`default ${spec.defaultText}`)
    }
    expect(serve).toContain('ROSTER_WEBHOOK_SECRET')
    const commands: [string[], string[]][] = [
      [['migrate'], ['--data-dir']],
      [['openapi'], []],
      [['backup'], ['--data-dir']],
      [['keys'], ['--name', '--json', '--data-dir']],
      [
        ['users'],
        [
          '--name',
          '--email',
          '--password-stdin',
          '--format',
          '--with-password-hashes',
          '--skip-invalid',
          '--data-dir',
        ],
      ],
    ]
    for (const [command, flags] of commands) {
      const help = await runBinary([...command, '--help'])
      expect({ command, code: help.code }).toEqual({ command, code: 0 })
      const text = flat(help.stdout)
      expect(text).toStartWith(`Usage: roster ${command[0]}`)
      for (const flag of flags)
        expect({ command, flag, listed: text.includes(flag) }).toEqual({
          command,
          flag,
          listed: true,
        })
      if (flags.includes('--data-dir'))
        expect(text).toContain('env ROSTER_DATA_DIR; default ./data')
    }
  })

  test('an unknown flag or command exits 2 with one line and no stack', async () => {
    using cwd = tempDir()
    for (const args of [
      ['--bogus'],
      ['serve', '--bogus=1'],
      ['frobnicate'],
      ['serve', '--port'],
      ['--port', 'abc'],
    ]) {
      const result = await runBinary(args, { cwd: cwd.path })
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
      expect(result.stderr).toStartWith('roster: ')
      expect(result.stderr).not.toMatch(NO_STACK)
    }
  })

  test('an unwritable data dir exits 1 with one clear line', async () => {
    using dir = tempDir()
    writeFileSync(join(dir.path, 'a-file'), 'x')
    const result = await runBinary(['serve', '--data-dir', join(dir.path, 'a-file', 'data')])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^roster: data directory .* is not writable \(ENOTDIR\)\n$/)
  })

  test('a busy port exits 1 with one clear line', async () => {
    using dir = tempDir()
    const first = await startBinary(['--data-dir', join(dir.path, 'a')])
    try {
      const port = new URL(first.url).port
      const second = await runBinary(['serve', '--port', port, '--data-dir', join(dir.path, 'b')])
      expect(second.code).toBe(1)
      expect(second.stderr).toBe(`roster: port ${port} on 127.0.0.1 is already in use\n`)
    } finally {
      await first.stop()
    }
  })

  test('every command takes --database-url and --storage (section 9)', async () => {
    for (const command of [
      ['keys', 'create'],
      ['keys', 'list'],
      ['users', 'create'],
      ['users', 'export'],
      ['users', 'import'],
      ['migrate'],
      ['backup'],
      ['openapi'],
    ]) {
      const help = await runBinary([...command, '--help'])
      expect({ command, code: help.code }).toEqual({ command, code: 0 })
      expect(help.stdout).toContain('--database-url')
      expect(help.stdout).toContain('--storage')
    }
    // Parsed, not refused as unknown: the bucket is checked (here, no credentials).
    using dir = tempDir()
    const key = await runBinary([
      'keys',
      'create',
      '--name',
      'k',
      '--data-dir',
      dir.path,
      '--storage',
      's3://bucket/prefix',
    ])
    expect(key.stderr).not.toContain('unknown flag')
    expect(key.stderr).toContain('needs --database-url')
  })

  test('migrate creates the database in an empty dir, then finds nothing to do', async () => {
    using dir = tempDir()
    const data = join(dir.path, 'data')
    const first = await runBinary(['migrate', '--data-dir', data])
    expect(first.code).toBe(0)
    // It says what it did: every migration applied, not "up to date".
    expect(first.stdout).toStartWith('applied 0000_init, 0001_credentials,')
    expect(first.stdout).not.toContain('up to date')
    const db = new Database(join(data, 'roster.db'), { readonly: true })
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'users'").get()).toEqual({
      name: 'users',
    })
    db.close()
    const second = await runBinary(['migrate', '--data-dir', data])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('was already up to date')
  })

  test('serves from ./data by default, keeps data across a restart, exits 0 on SIGTERM', async () => {
    using cwd = tempDir()
    const first = await startBinary([], { cwd: cwd.path })
    const created = await fetch(`${first.url}/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Ada', email: 'ada@example.com' }),
    })
    expect(created.status).toBe(201)
    expect(await first.stop('SIGTERM')).toBe(0)
    expect(first.stderr.join('\n')).toContain('"stopped"')

    const second = await startBinary([], { cwd: cwd.path })
    const user = (await (await fetch(`${second.url}/users/1`)).json()) as { email: string }
    expect(user.email).toBe('ada@example.com')
    expect(await second.stop('SIGINT')).toBe(0)
  })

  test('the startup line names the version, address, database, uploads and access mode', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path, '--rate-limit', '20/s'])
    const line = JSON.parse(server.stderr[0] as string)
    expect(line).toMatchObject({
      level: 'info',
      version: expect.any(String),
      address: server.url,
      data_dir: dir.path,
      database: `SQLite ${dir.path}/roster.db`,
      uploads: `disk ${dir.path}/uploads`,
      users_access: 'open',
      sync: 'full',
      rate_limit: '20/s',
    })
    expect(line.message).toBe(
      `roster ${JSON.parse(server.stderr[0] as string).version} listening on ${server.url}; database SQLite ${dir.path}/roster.db; uploads disk ${dir.path}/uploads; /users open; sync full; rate limit 20/s`,
    )
    await server.stop()
  })

  test('warns when bound to a non-loopback address with /users open', async () => {
    using dir = tempDir()
    const server = await startBinary([
      '--data-dir',
      dir.path,
      '--host',
      '0.0.0.0',
      '--users-access',
      'open',
    ])
    await waitForStderr(server, '/users open (asked for by name)')
    await server.stop()
  })

  test('warns when bound to a non-loopback address without --public-url (Link headers echo Host)', async () => {
    using dir = tempDir()
    const hostWarning = (lines: string[]) =>
      lines.filter((line) => line.includes('"warn"') && line.includes('without --public-url'))
    const key = (
      await runBinary(['keys', 'create', '--name', 'k', '--data-dir', dir.path])
    ).stdout.trim()
    const open = await startBinary(['--data-dir', dir.path, '--host', '0.0.0.0'])
    await waitForStderr(open, 'without --public-url')
    expect(hostWarning(open.stderr)).toHaveLength(1)
    // The default is kept: without --public-url, links follow the Host header sent.
    await fetch(`${open.url.replace('0.0.0.0', '127.0.0.1')}/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ name: 'A', email: 'a@example.com' }),
    })
    const link = await fetch(`${open.url.replace('0.0.0.0', '127.0.0.1')}/users`, {
      headers: { host: 'evil.test', 'x-api-key': key },
    })
    expect(link.headers.get('link')).toContain('<http://evil.test/users?')
    await open.stop()
    const pinned = await startBinary([
      '--data-dir',
      dir.path,
      '--host',
      '0.0.0.0',
      '--public-url',
      'https://roster.example.com',
    ])
    await Bun.sleep(50)
    expect(hostWarning(pinned.stderr)).toEqual([])
    const pinnedLink = await fetch(`${pinned.url.replace('0.0.0.0', '127.0.0.1')}/users`, {
      headers: { host: 'evil.test', 'x-api-key': key },
    })
    expect(pinnedLink.headers.get('link')).toContain('<https://roster.example.com/users?')
    expect(pinnedLink.headers.get('link')).not.toContain('evil.test')
    await pinned.stop()
    const local = await startBinary(['--data-dir', dir.path])
    await Bun.sleep(50)
    expect(hostWarning(local.stderr)).toEqual([])
    await local.stop()
  })

  test('refuses a database written by a newer roster, with one clear line', async () => {
    using dir = tempDir()
    expect((await runBinary(['migrate', '--data-dir', dir.path])).code).toBe(0)
    const db = new Database(join(dir.path, 'roster.db'))
    db.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [
      'future',
      Date.now() + 10 ** 10,
    ])
    db.close()
    const result = await runBinary(['serve', '--port', '0', '--data-dir', dir.path])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^roster: this database was written by a newer roster .*\n$/)
  })

  test('refuses a corrupt database file with one clear line', async () => {
    using dir = tempDir()
    writeFileSync(join(dir.path, 'roster.db'), 'definitely not sqlite '.repeat(500))
    const result = await runBinary(['serve', '--port', '0', '--data-dir', dir.path])
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('not a usable SQLite database')
  })

  test('openapi prints the document', async () => {
    using cwd = tempDir()
    const result = await runBinary(['openapi'], { cwd: cwd.path })
    expect(result.code).toBe(0)
    const doc = JSON.parse(result.stdout)
    expect(doc.openapi).toStartWith('3.')
    expect(Object.keys(doc.paths['/users'] ?? {}).sort()).toEqual([
      'get',
      'head',
      'options',
      'post',
    ])
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:8080', description: 'this roster' }])
    const named = await runBinary(['openapi', '--public-url', 'https://api.example.com/'], {
      cwd: cwd.path,
    })
    expect(JSON.parse(named.stdout).servers[0].url).toBe('https://api.example.com')
    // A running server names itself: the address the request came to.
    const server = await startBinary(['--data-dir', cwd.path])
    try {
      const served = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
        servers: { url: string }[]
      }
      expect(served.servers[0]?.url).toBe(server.url)
    } finally {
      await server.stop()
    }
  })

  test('--log-file gets the access log; the Swagger UI works offline from the binary', async () => {
    using dir = tempDir()
    const log = join(dir.path, 'access.log')
    const server = await startBinary(['--data-dir', dir.path, '--log-file', log])
    const page = await (await fetch(`${server.url}/swagger`)).text()
    expect(page).not.toContain('unpkg')
    const js = await fetch(`${server.url}/swagger/assets/swagger-ui-bundle.js`)
    expect(js.status).toBe(200)
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000)
    expect(await server.stop()).toBe(0)
    const lines = (await Bun.file(log).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.map((l) => l.route)).toEqual(['/swagger', '/swagger/assets/swagger-ui-bundle.js'])
  })

  test('create, read and delete through the binary, with the contract’s headers', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    const created = await fetch(`${server.url}/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Ada', email: 'ada@example.com' }),
    })
    expect(created.headers.get('location')).toBe('/v1/users/1')
    const read = await fetch(`${server.url}/v1/users/1`)
    expect(read.headers.get('etag')).toMatch(/^"1\.[0-9]+"$/)
    expect(read.headers.get('api-version')).toBe('1')
    const removed = await fetch(`${server.url}/v1/users/1`, { method: 'DELETE' })
    expect(await removed.json()).toEqual({ id: 1, deleted: true })
    const gone = await fetch(`${server.url}/v1/users/1`)
    expect(gone.status).toBe(404)
    await server.stop()
  })
})
