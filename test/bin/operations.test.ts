import { Database } from 'bun:sqlite'
import { beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'
import {
  expectAdminSignsIn,
  exportFile,
  fillRoster,
  moveRoster,
  withoutIds,
} from '../helpers/transfer'

beforeAll(requireBinary)

describe('roster backup (the compiled binary)', () => {
  test('copies a live database while it takes writes: every row committed before the backup is in the copy', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    try {
      const acknowledged: number[] = []
      let writing = true
      let n = 0
      const writer = (async () => {
        while (writing) {
          const response = await fetch(`${server.url}/users`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ name: `User ${n}`, email: `user${n++}@example.com` }),
          })
          const body = (await response.json()) as { id: number }
          if (response.status === 201) acknowledged.push(body.id)
        }
      })()
      while (acknowledged.length < 200) await Bun.sleep(5)
      const before = [...acknowledged]
      const target = join(dir.path, 'backup.db')
      const backup = await runBinary(['backup', target, '--data-dir', dir.path])
      const during = acknowledged.length
      writing = false
      await writer
      expect(backup.code).toBe(0)
      expect(backup.stdout).toMatch(
        /^backed up .*roster\.db to .*backup\.db: [0-9.]+ KiB in [0-9.]+ s\n$/,
      )
      expect(during).toBeGreaterThan(before.length)
      const copy = new Database(target, { readonly: true })
      const ids = new Set(
        copy
          .query<{ id: number }, []>('SELECT id FROM users')
          .all()
          .map((row) => row.id),
      )
      expect(before.filter((id) => !ids.has(id))).toEqual([])
      expect(copy.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
      copy.close()

      const again = await runBinary(['backup', target, '--data-dir', dir.path])
      expect(again.code).toBe(1)
      expect(again.stderr).toBe(`roster: ${target} already exists; not overwriting it\n`)
    } finally {
      await server.stop()
    }
  })

  test('backup without FILE, or with two, is a usage error', async () => {
    for (const args of [['backup'], ['backup', 'a.db', 'b.db']]) {
      const result = await runBinary(args)
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})

describe('roster users export and import (the compiled binary)', () => {
  const PASSWORD = 'correct horse battery staple'

  test('export with password hashes, import into another roster: same users, same passwords, formulas intact', async () => {
    using from = tempDir()
    using to = tempDir()
    const created = await runBinary(
      [
        'users',
        'create',
        '--name',
        '=cmd|calc',
        '--email',
        'ada@example.com',
        '--password-stdin',
        '--data-dir',
        from.path,
      ],
      { stdin: `${PASSWORD}\n` },
    )
    expect(created.code).toBe(0)
    await runBinary([
      'users',
      'create',
      '--name',
      'Bo, "B"',
      '--email',
      'bo@example.com',
      '--data-dir',
      from.path,
    ])
    const exported = await runBinary([
      'users',
      'export',
      '--format',
      'csv',
      '--with-password-hashes',
      '--data-dir',
      from.path,
    ])
    expect(exported.code).toBe(0)
    expect(exported.stderr).toBe('exported 2 users (csv)\n')
    expect(exported.stdout).toContain("1,'=cmd|calc,ada@example.com")
    const file = join(from.path, 'users.csv')
    await Bun.write(file, exported.stdout)

    const imported = await runBinary(['users', 'import', file, '--data-dir', to.path])
    expect(imported.code).toBe(0)
    expect(imported.stdout).toMatch(/^imported 2 users in [0-9.]+ s\n$/)
    expect(imported.stderr).toContain('checking: 2 rows (100%)')

    const again = await runBinary(['users', 'export', '--data-dir', to.path])
    expect(
      again.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).name),
    ).toEqual(['=cmd|calc', 'Bo, "B"'])
    const server = await startBinary(['--data-dir', to.path])
    try {
      const login = await fetch(`${server.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }),
      })
      expect(login.status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  test('a move loses nothing: every field of every user, groups by name, SCIM profiles, and with --keep-ids the ids; the second export is the first, byte for byte', async () => {
    using from = tempDir()
    using to = tempDir()
    await fillRoster(['--data-dir', from.path])
    const { first, second } = await moveRoster(
      ['--data-dir', from.path],
      ['--data-dir', to.path],
      exportFile(from.path),
      ['--keep-ids'],
    )
    expect(second).toBe(first)
    const users = first
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(
      users.map((user) => [user.id, user.role, user.active, user.username, user.groups]),
    ).toEqual([
      [1, 'admin', true, 'ada@example.com', []],
      [2, 'member', false, 'bo@example.com', ['Engineering', 'Ops']],
      [4, 'member', true, 'grace.h', ['Ops']],
      [5, 'member', true, 'cy@example.com', []],
    ])
    expect(users[2].scim).toMatchObject({ external_id: 'okta-00u1', manager_id: 'm-1' })
    await expectAdminSignsIn(['--data-dir', to.path])
    // Into a roster that has users, kept ids could be theirs: refused, nothing imported.
    const again = await runBinary([
      'users',
      'import',
      exportFile(from.path),
      '--keep-ids',
      '--data-dir',
      to.path,
    ])
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(
      "roster: --keep-ids imports only into a roster with no users; this one has 4 (their ids could be the file's)\n",
    )
  })

  test('CSV says what it cannot carry: the export warns with counts, the import notes it', async () => {
    using from = tempDir()
    using to = tempDir()
    await fillRoster(['--data-dir', from.path])
    const exported = await runBinary([
      'users',
      'export',
      '--format',
      'csv',
      '--data-dir',
      from.path,
    ])
    expect(exported.code).toBe(0)
    expect(exported.stderr).toBe(
      'exported 4 users (csv)\nroster: warning: CSV cannot carry the groups of 2 user(s) or the SCIM profiles of 2 user(s); they are not in this file (export with --format jsonl to move them)\n',
    )
    const file = join(from.path, 'users.csv')
    await Bun.write(file, exported.stdout)
    const imported = await runBinary(['users', 'import', file, '--data-dir', to.path])
    expect(imported.code).toBe(0)
    expect(imported.stderr).toStartWith(
      'roster: note: a CSV file carries no groups and no SCIM profiles; the imported users get none (move them with JSON Lines: roster users export --format jsonl)\n',
    )
    const again = await runBinary(['users', 'export', '--format', 'csv', '--data-dir', to.path])
    expect(withoutIds(again.stdout)).toBe(withoutIds(exported.stdout))
    expect(again.stderr).toBe('exported 4 users (csv)\n')
  })

  test('one invalid row imports nothing and lists every problem by line; --skip-invalid imports the rest', async () => {
    using dir = tempDir()
    const file = join(dir.path, 'users.jsonl')
    await Bun.write(
      file,
      [
        '{"name":"Ada","email":"ada@example.com"}',
        '{"name":"Bad email","email":"nope"}',
        '',
        '{"name":"Ada again","email":"ADA@example.com"}',
        '{"name":"Secret","email":"s@example.com","password":"short1"}',
        '{"name":"Cy","email":"cy@example.com","password":"a fine long password"}',
      ].join('\n'),
    )
    const refused = await runBinary(['users', 'import', file, '--data-dir', dir.path])
    expect(refused.code).toBe(1)
    const lines = refused.stderr.split('\n').filter((line) => line.startsWith('line '))
    expect(lines).toEqual([
      'line 2: email must be a valid email address of at most 254 characters (received "nope")',
      'line 4: email ADA@example.com is already on line 1',
      'line 5: password must be 8–128 characters',
    ])
    expect(refused.stderr).toContain('roster: 3 invalid row(s); nothing was imported')
    expect(refused.stderr).not.toContain('short1')
    expect((await runBinary(['users', 'export', '--data-dir', dir.path])).stdout).toBe('')

    const partial = await runBinary(
      ['users', 'import', '-', '--skip-invalid', '--data-dir', dir.path],
      {
        stdin: await Bun.file(file).text(),
      },
    )
    expect(partial.code).toBe(0)
    expect(partial.stdout).toMatch(/^imported 2 users in [0-9.]+ s; skipped 3 invalid row\(s\)\n$/)
    const emails = (await runBinary(['users', 'export', '--data-dir', dir.path])).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).email)
    expect(emails).toEqual(['ada@example.com', 'cy@example.com'])
  })

  test('GET /users/export answers the same bytes as `roster users export` but for SCIM profiles, while the server runs', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    for (const [name, email] of [
      ['=cmd|calc', 'ada@example.com'],
      ['Bo, "B"', 'bo@example.com'],
    ] as const) {
      expect(
        (await runBinary(['users', 'create', '--name', name, '--email', email, ...data])).code,
      ).toBe(0)
    }
    const key = (await runBinary(['keys', 'create', '--name', 'export', ...data])).stdout.trim()
    const server = await startBinary(data)
    try {
      for (const format of ['jsonl', 'csv']) {
        const cli = await runBinary(['users', 'export', '--format', format, ...data])
        expect(cli.code).toBe(0)
        const http = await fetch(`${server.url}/users/export?format=${format}`, {
          headers: { 'x-api-key': key },
        })
        expect(http.status).toBe(200)
        // SCIM's profiles are the scim scope's to read, not users:read's: HTTP leaves them out.
        expect(await http.text()).toBe(cli.stdout.replaceAll(',"scim":null}', '}'))
      }
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('usage errors are one line and exit 2', async () => {
    for (const args of [
      ['users'],
      ['users', 'delete'],
      ['users', 'import'],
      ['users', 'import', '/no/such/file.jsonl'],
      ['users', 'export', '--format', 'xml'],
    ]) {
      const result = await runBinary(args)
      expect({ args, code: result.code }).toEqual({ args, code: 2 })
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})

describe('metrics and the rate limit (the compiled binary)', () => {
  test('/metrics counts real traffic by route template; --rate-limit answers 429 with its headers', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path, '--rate-limit', '5/s'])
    try {
      const statuses: number[] = []
      for (let i = 0; i < 7; i++) {
        const response = await fetch(`${server.url}/users/${i + 1}`)
        statuses.push(response.status)
        if (response.status === 429) {
          expect(response.headers.get('retry-after')).toBe('1')
          expect(response.headers.get('ratelimit-limit')).toBe('5')
          expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
            'RATE_LIMITED',
          )
        } else {
          await response.arrayBuffer()
        }
      }
      expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(1)
      const metrics = await fetch(`${server.url}/metrics`)
      expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
      const text = await metrics.text()
      expect(text).toMatch(
        /^roster_http_requests_total\{method="GET",route="\/users\/:id",status="404"\} [1-5]$/m,
      )
      expect(text).toMatch(
        /^roster_http_requests_total\{method="GET",route="\/users\/:id",status="429"\} [1-9]$/m,
      )
      expect(text).toMatch(/^process_resident_memory_bytes \d+$/m)
      expect(text).toMatch(/^roster_build_info\{version="\d+\.\d+\.\d+"\} 1$/m)
    } finally {
      await server.stop()
    }
  })

  test('concurrent writes share group commits at --sync full; each 201 is readable at once', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path, '--sync', 'full'])
    try {
      const created = await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          fetch(`${server.url}/users`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ name: `User ${i}`, email: `user${i}@example.com` }),
          }).then(async (response) => ({
            status: response.status,
            location: response.headers.get('location'),
            body: (await response.json()) as { id: number },
          })),
        ),
      )
      expect(created.every((reply) => reply.status === 201)).toBe(true)
      // Answered after the commit: another connection reads every one of them right away.
      for (const reply of created) {
        expect((await fetch(`${server.url}${reply.location}`)).status).toBe(200)
      }
      const text = await (await fetch(`${server.url}/metrics`)).text()
      const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
      expect(value('roster_db_writes_total')).toBeGreaterThanOrEqual(64)
      expect(value('roster_db_commits_total')).toBeGreaterThanOrEqual(1)
      expect(value('roster_db_commits_total')).toBeLessThan(value('roster_db_writes_total'))
    } finally {
      await server.stop()
    }
  })
})

describe('commands on a data dir without a database (the compiled binary)', () => {
  test('say on stderr that they made a new, empty database, once, and still do their work', async () => {
    using dir = tempDir()
    const first = await runBinary(['keys', 'create', '--name', 'ci', '--data-dir', dir.path])
    expect(first.code).toBe(0)
    expect(first.stdout).toStartWith('rk_')
    expect(first.stderr).toContain(
      `roster: there was no database at ${join(dir.path, 'roster.db')}; made a new, empty one`,
    )
    for (const args of [
      ['keys', 'list'],
      ['users', 'export'],
      ['mail', 'list'],
    ]) {
      const again = await runBinary([...args, '--data-dir', dir.path])
      expect(again.code).toBe(0)
      expect(again.stderr).not.toContain('there was no database')
    }
  })
})
