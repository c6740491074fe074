import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BackupError, backupDatabase } from '../../src/backends/sqlite/backup'
import { makeTestApp, sqlitePath } from '../helpers/app'

describe('backupDatabase', () => {
  test('writes a checked copy holding every committed row, readable by the owner only', async () => {
    await using t = await makeTestApp()
    for (let i = 0; i < 50; i++)
      await t.post('/users', { name: `U${i}`, email: `u${i}@example.com` })
    const target = join(t.dataDir, 'copy.db')
    const { bytes, ms } = backupDatabase(sqlitePath(t.deps), target)
    expect(bytes).toBe(statSync(target).size)
    expect(ms).toBeGreaterThan(0)
    expect(statSync(target).mode & 0o777).toBe(0o600)
    const copy = new Database(target, { readonly: true })
    expect(copy.query('SELECT count(*) AS n FROM users').get()).toEqual({ n: 50 })
    expect(copy.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
    copy.close()
    expect(readdirSync(t.dataDir).filter((name) => name.includes('partial'))).toEqual([])
  })

  test('refuses to overwrite a file, and leaves it as it was', async () => {
    await using t = await makeTestApp()
    const target = join(t.dataDir, 'precious.db')
    writeFileSync(target, 'keep me')
    expect(() => backupDatabase(sqlitePath(t.deps), target)).toThrow(
      new BackupError(`${target} already exists; not overwriting it`),
    )
    expect(Bun.file(target).size).toBe(7)
    expect(readdirSync(t.dataDir).filter((name) => name.includes('partial'))).toEqual([])
  })

  test('refuses a missing database and an unwritable destination, with one line each', async () => {
    await using t = await makeTestApp()
    expect(() => backupDatabase(join(t.dataDir, 'none.db'), join(t.dataDir, 'x.db'))).toThrow(
      'there is no database at',
    )
    // A destination inside a file: no folder can be made there.
    const underFile = join(sqlitePath(t.deps), 'x.db')
    expect(() => backupDatabase(sqlitePath(t.deps), underFile)).toThrow(
      `cannot write in ${sqlitePath(t.deps)}: it is not a folder`,
    )
  })

  test('makes the destination’s missing folders, readable by the owner only', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const folder = join(t.dataDir, 'backups', 'nightly')
    const target = join(folder, 'roster.db')
    backupDatabase(sqlitePath(t.deps), target)
    expect(statSync(folder).mode & 0o777).toBe(0o700)
    const copy = new Database(target, { readonly: true })
    expect(copy.query('SELECT count(*) AS n FROM users').get()).toEqual({ n: 1 })
    copy.close()
  })
})
