import { describe, expect, test } from 'bun:test'
import { ImportFileError, readRecords } from '../../src/users/import-records'
import type { ExportedUser } from '../../src/users/records'
import { exportChunks, RowValidator, type TransferFormat } from '../../src/users/transfer'
import { makeTestApp } from '../helpers/app'

async function records(text: string, format: TransferFormat, chunk = 5) {
  const bytes = new TextEncoder().encode(text)
  async function* source() {
    for (let i = 0; i < bytes.length; i += chunk) yield bytes.slice(i, i + chunk)
  }
  const out = []
  for await (const record of readRecords(source(), format)) out.push(record)
  return out
}

const HASH =
  '$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0Fr+qLLwMHq0Qn3yKS0rRnTqgSzTBxR1mxjfhJ6yFmE'

describe('readRecords', () => {
  test('JSON Lines: one object per line, blank lines skipped, bad lines reported by number', async () => {
    const text =
      '{"name":"A","email":"a@x.io"}\n\n  \nnot json\n[1]\n{"name":"Zoë","email":"z@x.io"}'
    expect(await records(text, 'jsonl')).toEqual([
      { line: 1, value: { name: 'A', email: 'a@x.io' } },
      { line: 4, error: 'not valid JSON' },
      { line: 5, error: 'not a JSON object' },
      { line: 6, value: { name: 'Zoë', email: 'z@x.io' } },
    ])
  })

  test('CSV: a header row, any column order, empty cells absent, quoted line breaks counted', async () => {
    const text =
      'Email,NAME,id,password\r\na@x.io,"Ada, Countess",7,\r\n"b@x.io","Two\nlines",,secret-password\r\nc@x.io\r\n'
    expect(await records(text, 'csv', 3)).toEqual([
      { line: 2, value: { email: 'a@x.io', name: 'Ada, Countess', id: '7' } },
      {
        line: 3,
        value: { email: 'b@x.io', name: 'Two\nlines', password: 'secret-password' },
      },
      { line: 5, error: 'has 1 fields; the header has 4' },
    ])
  })

  test('file-level problems stop the import with one line', async () => {
    await expect(records('name,email,role\n', 'csv')).rejects.toThrow(
      new ImportFileError(
        'line 1: unknown column "role" (roster reads name, email, password, password_hash; id, created_at, updated_at and version are accepted and ignored)',
      ),
    )
    await expect(records('name\nA\n', 'csv')).rejects.toThrow('the header has no "email" column')
    await expect(records('name,email,Name\n', 'csv')).rejects.toThrow('column "name" appears twice')
    await expect(records('', 'csv')).rejects.toThrow('the file is empty')
    await expect(records('name,email\n"open', 'csv')).rejects.toThrow(
      'line 2: a quoted field is not closed',
    )
    const latin1 = new Uint8Array([0x6e, 0x61, 0x6d, 0x65, 0xe9, 0x0a])
    async function* bad() {
      yield latin1
    }
    const reading = (async () => {
      for await (const _ of readRecords(bad(), 'jsonl')) {
      }
    })()
    await expect(reading).rejects.toThrow('the file is not valid UTF-8')
  })
})

describe('RowValidator', () => {
  test('checks rows as POST /users does, and emails against the database and earlier rows', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Old', email: 'old@example.com' })
    const validator = new RowValidator(t.deps.users)
    const check = (line: number, value: Record<string, unknown>) => validator.check(line, value)
    expect(await check(1, { name: ' Ada ', email: 'ada@example.com', id: 9, version: 3 })).toEqual({
      line: 1,
      name: ' Ada ',
      email: 'ada@example.com',
      password: null,
      passwordHash: null,
    })
    expect(await check(2, { name: 'Again', email: 'ADA@example.com' })).toEqual({
      line: 2,
      message: 'email ADA@example.com is already on line 1',
    })
    expect(await check(3, { name: 'X', email: 'OLD@example.com' })).toEqual({
      line: 3,
      message: 'a user with email OLD@example.com already exists',
    })
    expect(await check(4, { email: 'not-an-email', role: 'admin' })).toEqual({
      line: 4,
      message:
        'unknown field "role"; name is required; email must be a valid email address of at most 254 characters (received "not-an-email")',
    })
    const short = await check(5, { name: 'P', email: 'p@example.com', password: 'hunter2' })
    expect(short).toEqual({ line: 5, message: 'password must be 8–128 characters' })
    expect(JSON.stringify(short)).not.toContain('hunter2')
    expect(
      await check(6, { name: 'H', email: 'h@example.com', password_hash: HASH, created_at: 'x' }),
    ).toMatchObject({ line: 6, passwordHash: HASH, password: null })
    expect(
      await check(7, { name: 'N', email: 'n@example.com', password_hash: null }),
    ).toMatchObject({
      passwordHash: null,
    })
  })

  test('password_hash: argon2 or bcrypt with bounded costs, not both with a password, never echoed', async () => {
    await using t = await makeTestApp()
    const validator = new RowValidator(t.deps.users)
    let n = 0
    const message = async (value: Record<string, unknown>) => {
      const result = await validator.check(++n, { name: 'H', email: `h${n}@example.com`, ...value })
      return 'message' in result ? result.message : null
    }
    expect(await message({ password_hash: HASH.replace('m=65536', 'm=4194304') })).toBe(
      'password_hash has argon2 costs above m=65536,t=16,p=8',
    )
    expect(await message({ password_hash: 'md5:5f4dcc3b5aa765d61d8327deb882cf99' })).toBe(
      'password_hash must be an argon2 (PHC string) or bcrypt hash',
    )
    expect(await message({ password_hash: `$2b$10$${'a'.repeat(53)}` })).toBeNull()
    expect(await message({ password_hash: `$2b$31$${'a'.repeat(53)}` })).toBe(
      'password_hash has a bcrypt cost above 16',
    )
    expect(await message({ password_hash: HASH, password: 'long enough secret' })).toBe(
      'give password or password_hash, not both',
    )
    expect(await message({ password_hash: 42 })).toBe('password_hash must be a string')
  })
})

/** The export's text as lines, with the users given as one batch. */
async function exportLines(
  users: ExportedUser[],
  format: TransferFormat,
  withHashes: boolean,
): Promise<string[]> {
  async function* batches() {
    yield users
  }
  const text = (await Array.fromAsync(exportChunks(batches(), format, withHashes))).join('')
  return text.split(/(?<=\n)/)
}

describe('exportChunks', () => {
  const users = [
    {
      id: 1,
      name: '=HYPERLINK("http://evil")',
      email: 'a@x.io',
      created_at: 't1',
      updated_at: 't2',
      password_hash: HASH,
    },
    {
      id: 2,
      name: 'Plain, "quoted"',
      email: 'b@x.io',
      created_at: 't',
      updated_at: 't',
      password_hash: null,
    },
  ]

  test('JSON Lines without hashes unless asked', async () => {
    const lines = await exportLines(users, 'jsonl', false)
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      {
        id: 1,
        name: '=HYPERLINK("http://evil")',
        email: 'a@x.io',
        created_at: 't1',
        updated_at: 't2',
      },
      { id: 2, name: 'Plain, "quoted"', email: 'b@x.io', created_at: 't', updated_at: 't' },
    ])
    expect(JSON.parse((await exportLines(users, 'jsonl', true))[0] as string).password_hash).toBe(
      HASH,
    )
  })

  test('CSV with a header, quoting and the formula guard; it reads back to the same values', async () => {
    const text = (await exportLines(users, 'csv', true)).join('')
    expect(text.split('\r\n')[0]).toBe('id,name,email,created_at,updated_at,password_hash')
    expect(text).toContain(`1,"'=HYPERLINK(""http://evil"")",a@x.io`)
    const back = await records(text, 'csv', 4)
    expect(back).toEqual([
      {
        line: 2,
        value: {
          id: '1',
          name: '=HYPERLINK("http://evil")',
          email: 'a@x.io',
          created_at: 't1',
          updated_at: 't2',
          password_hash: HASH,
        },
      },
      {
        line: 3,
        value: {
          id: '2',
          name: 'Plain, "quoted"',
          email: 'b@x.io',
          created_at: 't',
          updated_at: 't',
        },
      },
    ])
  })
})

describe('insertMany', () => {
  test('all or nothing: one taken email rolls the batch back; otherwise conflicts are skipped', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Taken', email: 'taken@example.com' })
    const rows = [
      { name: 'A', email: 'a@example.com', passwordHash: null },
      { name: 'T', email: 'TAKEN@example.com', passwordHash: null },
      { name: 'B', email: 'b@example.com', passwordHash: null },
    ]
    expect(await t.deps.users.insertMany(rows, { allOrNothing: true })).toEqual({
      inserted: 0,
      conflicts: [1],
    })
    expect(await t.deps.users.count()).toBe(1)
    expect(await t.deps.users.insertMany(rows, { allOrNothing: false })).toEqual({
      inserted: 2,
      conflicts: [1],
    })
    expect(await t.deps.users.count()).toBe(3)
  })
})

describe('export then import gives the same names back', () => {
  const user = (id: number, name: string): ExportedUser => ({
    id,
    name,
    email: `u${id}@example.com`,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    password_hash: null,
  })
  const names = [
    "'=x",
    "'plain",
    '=SUM(A1)',
    "''",
    "'",
    '-1',
    'line\u2028separator',
    'para\u2029graph',
  ]

  for (const format of ['csv', 'jsonl'] as const) {
    test(`${format}: a guard that was there comes off, one that was not stays away`, async () => {
      async function* batches() {
        yield names.map((name, i) => user(i + 1, name))
      }
      let text = ''
      for await (const chunk of exportChunks(batches(), format, false)) text += chunk
      if (format === 'jsonl') {
        // One record per line, whatever line separators a name holds.
        expect(text.split(/\r\n|\r|\n|\u2028|\u2029/).filter(Boolean)).toHaveLength(names.length)
      }
      const read = await records(text, format)
      expect(read.map((record) => ('value' in record ? record.value.name : record))).toEqual(names)
    })
  }
})
