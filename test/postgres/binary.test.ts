import { describe, expect, test } from 'bun:test'
import { readFileSync, truncateSync } from 'node:fs'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { freshDatabase } from '../helpers/postgres'
import { freshStorage, objectsUnder } from '../helpers/s3'
import { expectAdminSignsIn, exportFile, fillRoster, moveRoster } from '../helpers/transfer'

// The compiled binary on PostgreSQL, as an operator runs it: --database-url on every command.

/** The URL with a password in it (the test server trusts loopback, so any password works). */
function withPassword(url: string): string {
  const parsed = new URL(url)
  parsed.password = 'hunter2-secret'
  return parsed.toString()
}

describe('roster (the compiled binary) on PostgreSQL', () => {
  test('serve, keys, migrate and users commands share one database; the password never shows', async () => {
    requireBinary()
    await using database = await freshDatabase()
    using dir = tempDir()
    const url = withPassword(database.url)
    const flags = ['--database-url', url, '--data-dir', dir.path]
    const server = await startBinary(flags)
    try {
      const line = JSON.parse(server.stderr[0] as string)
      expect(line.database).toMatch(
        /^PostgreSQL \d+(\.\d+)* at postgres:\/\/.*:\*\*\*@127\.0\.0\.1:\d+\//,
      )
      expect(server.stderr.join('\n')).not.toContain('hunter2-secret')
      const created = await fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', email: 'ada@example.com' }),
      })
      expect(created.status).toBe(201)
      const key = await runBinary(['keys', 'create', '--name', 'ops', ...flags])
      expect(key.code).toBe(0)
      const data = await fetch(`${server.url}/data`, {
        headers: { 'x-api-key': key.stdout.trim() },
      })
      expect(await data.json()).toMatchObject({ data: { users: 1 } })
      const exported = await runBinary(['users', 'export', ...flags])
      expect(exported.code).toBe(0)
      expect(exported.stdout).toContain('ada@example.com')
      const health = await (await fetch(`${server.url}/health`)).json()
      expect(health.checks).toEqual({ database: 'ok', storage: 'ok', disk: 'ok' })
    } finally {
      await server.stop()
    }
    const migrated = await runBinary(['migrate', ...flags])
    expect(migrated.code).toBe(0)
    expect(migrated.stdout).toContain('was already up to date')
    expect(migrated.stdout + migrated.stderr).not.toContain('hunter2-secret')
    const again = await startBinary(flags)
    const user = await fetch(`${again.url}/users/1`)
    expect((await user.json()).email).toBe('ada@example.com')
    await again.stop()
  })

  test('backup on PostgreSQL says to use pg_dump: one line, exit 2', async () => {
    requireBinary()
    await using database = await freshDatabase()
    using dir = tempDir()
    const result = await runBinary(['backup', `${dir.path}/x.db`, '--database-url', database.url])
    expect(result.code).toBe(2)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('pg_dump')
  })

  test('an unreachable database: one line, exit 1, no password, no stack', async () => {
    requireBinary()
    using dir = tempDir()
    const result = await runBinary([
      'serve',
      '--port',
      '0',
      '--data-dir',
      dir.path,
      '--database-url',
      'postgres://roster:hunter2-secret@127.0.0.1:1/roster',
    ])
    expect(result.code).toBe(1)
    const lines = result.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(
      'cannot connect to PostgreSQL at postgres://roster:***@127.0.0.1:1/roster',
    )
    expect(result.stderr).not.toContain('hunter2-secret')
    expect(result.stderr).not.toMatch(/\bat .*:\d+:\d+/)
  })

  test('a URL that is not postgres://: one line naming the flag, exit 2', async () => {
    requireBinary()
    for (const bad of ['mysql://u:p@host/db', 'not a url', 'postgres://']) {
      const result = await runBinary(['serve', '--database-url', bad])
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
      expect(result.stderr).toContain('--database-url')
      expect(result.stderr).not.toContain(':p@')
    }
  })

  test('two instances started together migrate once and serve the same users', async () => {
    requireBinary()
    await using database = await freshDatabase()
    using a = tempDir()
    using b = tempDir()
    const [first, second] = await Promise.all([
      startBinary(['--database-url', database.url, '--data-dir', a.path]),
      startBinary(['--database-url', database.url, '--data-dir', b.path]),
    ])
    try {
      const created = await fetch(`${first.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Grace', email: 'grace@example.com' }),
      })
      expect(created.status).toBe(201)
      const { id } = (await created.json()) as { id: number }
      expect((await (await fetch(`${second.url}/users/${id}`)).json()).name).toBe('Grace')
    } finally {
      await Promise.all([first.stop(), second.stop()])
    }
  })
})

/** The peak resident set of a process (VmHWM), in MB. */
const peakRssMb = (pid: number) =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024

/** Uploads a file of `size` zero bytes with curl streaming it from disk (as bench/uploads.ts). */
async function curlUpload(url: string, size: number): Promise<{ status: number; body: string }> {
  using dir = tempDir()
  const path = `${dir.path}/big.bin`
  await Bun.write(path, '')
  truncateSync(path, size)
  const proc = Bun.spawn(
    [
      'curl',
      '-sS',
      '-X',
      'POST',
      '-o',
      '-',
      '-w',
      '\n%{http_code}',
      '-H',
      'content-type: application/octet-stream',
      '-T',
      path,
      url,
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const out = await new Response(proc.stdout).text()
  await proc.exited
  const newline = out.lastIndexOf('\n')
  return { status: Number(out.slice(newline + 1)), body: out.slice(0, newline) }
}

describe('roster users export and import (the compiled binary) on PostgreSQL', () => {
  test('a move into a fresh database loses nothing: every field of every user, groups by name, SCIM profiles, ids with --keep-ids; the second export is the first, byte for byte', async () => {
    requireBinary()
    await using fromDatabase = await freshDatabase()
    await using toDatabase = await freshDatabase()
    using dir = tempDir()
    const from = ['--database-url', fromDatabase.url, '--data-dir', dir.path]
    const to = ['--database-url', toDatabase.url, '--data-dir', dir.path]
    await fillRoster(from)
    const { first, second } = await moveRoster(from, to, exportFile(dir.path), ['--keep-ids'])
    expect(second).toBe(first)
    expect(first).toContain('"role":"admin"')
    expect(first).toContain('"groups":["Engineering","Ops"]')
    expect(first).toContain('"external_id":"okta-00u1"')
    await expectAdminSignsIn(to)
    // The next user comes after the highest id kept (the identity's sequence moved on).
    const created = await runBinary([
      'users',
      'create',
      '--name',
      'Next',
      '--email',
      'next@example.com',
      ...to,
    ])
    expect(JSON.parse(created.stdout).id).toBe(6)
  })
})

describe('roster (the compiled binary) with uploads in S3', () => {
  test('the startup line names the bucket; a 1 GiB upload streams there (peak RSS under 120 MB) and back', async () => {
    requireBinary()
    await using database = await freshDatabase()
    using dir = tempDir()
    const { storage, env } = await freshStorage()
    const target = `s3://${storage.bucket}/${storage.prefix}`
    const server = await startBinary(
      [
        '--database-url',
        database.url,
        '--data-dir',
        dir.path,
        '--storage',
        target,
        '--max-file-size',
        '1GiB',
      ],
      { env: cleanEnv(env) },
    )
    try {
      const line = JSON.parse(server.stderr[0] as string)
      expect(line.uploads).toBe(`${target} at ${env.S3_ENDPOINT}`)
      expect(server.stderr.join('\n')).not.toContain(env.S3_SECRET_ACCESS_KEY as string)
      const size = 1024 * 1024 * 1024
      const upload = await curlUpload(`${server.url}/upload?filename=big.bin&public=true`, size)
      expect(upload.status).toBe(201)
      const file = (JSON.parse(upload.body) as { files: { id: string; size: number }[] }).files[0]
      expect(file?.size).toBe(size)
      expect(peakRssMb(server.proc.pid)).toBeLessThan(120)
      expect(await objectsUnder(storage.prefix)).toEqual([file?.id as string])
      const range = await fetch(`${server.url}/files/${file?.id}`, {
        headers: { range: `bytes=${size - 4}-` },
      })
      expect(range.status).toBe(206)
      expect(new Uint8Array(await range.arrayBuffer())).toEqual(new Uint8Array(4))
      const health = await (await fetch(`${server.url}/health`)).json()
      expect(health.checks).toEqual({ database: 'ok', storage: 'ok', disk: 'ok' })
    } finally {
      await server.stop()
    }
  }, 180_000)

  test('missing credentials: one line, exit 1; --storage without PostgreSQL or malformed: exit 2', async () => {
    requireBinary()
    await using database = await freshDatabase()
    using dir = tempDir()
    const { storage, env } = await freshStorage()
    const target = `s3://${storage.bucket}/${storage.prefix}`
    const serve = (args: string[], extra: Record<string, string>) =>
      runBinary(['serve', '--port', '0', '--data-dir', dir.path, ...args], { env: cleanEnv(extra) })
    const noCredentials = await serve(['--database-url', database.url, '--storage', target], {
      S3_ENDPOINT: env.S3_ENDPOINT as string,
    })
    expect(noCredentials.code).toBe(1)
    expect(noCredentials.stderr.trim().split('\n')).toHaveLength(1)
    expect(noCredentials.stderr).toContain('missing S3 credentials')
    const unreachable = await serve(['--database-url', database.url, '--storage', target], {
      ...env,
      S3_ENDPOINT: 'http://127.0.0.1:1',
    } as Record<string, string>)
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1)
    expect(unreachable.stderr).toContain('is not usable')
    expect(unreachable.stderr).not.toContain(env.S3_SECRET_ACCESS_KEY as string)
    const onSqlite = await serve(['--storage', target], env)
    expect(onSqlite.code).toBe(2)
    expect(onSqlite.stderr).toContain('needs --database-url')
    for (const bad of ['s3://', 'https://bucket', 's3://UPPER', 's3://ok-bucket//x']) {
      const malformed = await serve(['--database-url', database.url, '--storage', bad], env)
      expect(malformed.code).toBe(2)
      expect(malformed.stderr).toContain('--storage')
    }
  })
})
