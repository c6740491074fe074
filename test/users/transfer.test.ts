import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { ENTERPRISE_SCHEMA } from '../../src/scim/names'
import { ImportFileError, readRecords } from '../../src/users/import-records'
import type { ExportedUser } from '../../src/users/records'
import {
  exportChunks,
  type ImportRow,
  importedUser,
  type LeftOut,
  RowValidator,
  type TransferFormat,
} from '../../src/users/transfer'
import { makeTestApp, type TestApp } from '../helpers/app'
import { apiKey, PASSWORD } from '../helpers/auth'

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
    await expect(records('name,email,rank\n', 'csv')).rejects.toThrow(
      new ImportFileError(
        'line 1: unknown column "rank" (roster reads name, email, username, password, password_hash, active, role, email_verified_at, created_at, updated_at; id and version are accepted and ignored)',
      ),
    )
    await expect(records('name,email,groups\n', 'csv')).rejects.toThrow(
      new ImportFileError(
        'line 1: a CSV file cannot carry "groups" (groups and SCIM profiles move in JSON Lines: roster users export --format jsonl)',
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
      id: null,
      name: ' Ada ',
      email: 'ada@example.com',
      password: null,
      passwordHash: null,
      username: null,
      active: true,
      role: 'member',
      emailVerifiedAt: null,
      createdAt: null,
      updatedAt: null,
      groups: [],
      scim: null,
    })
    expect(await check(2, { name: 'Again', email: 'ADA@example.com' })).toEqual({
      line: 2,
      message: 'email ADA@example.com is already on line 1',
    })
    expect(await check(3, { name: 'X', email: 'OLD@example.com' })).toEqual({
      line: 3,
      message: 'a user with email OLD@example.com already exists',
    })
    expect(await check(4, { email: 'not-an-email', rank: 'admin' })).toEqual({
      line: 4,
      message:
        'unknown field "rank"; name is required; email must be a valid email address of at most 254 characters (received "not-an-email")',
    })
    const short = await check(5, { name: 'P', email: 'p@example.com', password: 'hunter2' })
    expect(short).toEqual({ line: 5, message: 'password must be 8–128 characters' })
    expect(JSON.stringify(short)).not.toContain('hunter2')
    expect(
      await check(6, { name: 'H', email: 'h@example.com', password_hash: HASH }),
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

describe('RowValidator: the rest of a record', () => {
  test('username, active, role, times, groups and the SCIM profile are read back as an export wrote them', async () => {
    await using t = await makeTestApp()
    const validator = new RowValidator(t.deps.users)
    const row = await validator.check(1, {
      name: 'Grace',
      email: 'grace@example.com',
      username: 'grace.h',
      active: false,
      role: 'admin',
      email_verified_at: '2026-01-02T03:04:05.006Z',
      created_at: '2026-01-01T00:00:00+01:00',
      updated_at: '2026-01-03T00:00:00.000Z',
      groups: ['Engineering', ' Ops '],
      scim: PROFILE,
    })
    expect(row).toEqual({
      line: 1,
      id: null,
      name: 'Grace',
      email: 'grace@example.com',
      password: null,
      passwordHash: null,
      username: 'grace.h',
      active: false,
      role: 'admin',
      emailVerifiedAt: '2026-01-02T03:04:05.006Z',
      // Kept as every time is shown: UTC, milliseconds.
      createdAt: '2025-12-31T23:00:00.000Z',
      updatedAt: '2026-01-03T00:00:00.000Z',
      groups: ['Engineering', 'Ops'],
      scim: PROFILE,
    })
  })

  test('each field refused with a line that says why; nothing else on the row is lost', async () => {
    await using t = await makeTestApp()
    const validator = new RowValidator(t.deps.users)
    let n = 0
    const message = async (value: Record<string, unknown>) => {
      const result = await validator.check(++n, { name: 'U', email: `u${n}@example.com`, ...value })
      return 'message' in result ? result.message : null
    }
    expect(await message({ role: 'owner' })).toBe('role must be member or admin (received "owner")')
    expect(await message({ active: 'yes' })).toBe('active must be true or false (received "yes")')
    expect(await message({ created_at: '2026-01-01' })).toBe(
      'created_at must be a time such as 2026-01-31T12:00:00.000Z (received "2026-01-01")',
    )
    expect(await message({ email_verified_at: 'soon', updated_at: 7 })).toBe(
      'email_verified_at must be a time such as 2026-01-31T12:00:00.000Z (received "soon"); updated_at must be a time such as 2026-01-31T12:00:00.000Z (received "7")',
    )
    expect(await message({ groups: 'Engineering' })).toBe('groups must be a list of group names')
    expect(await message({ groups: ['Ops', 'ops'] })).toBe('groups names "ops" twice')
    expect(await message({ groups: ['\u202eevil'] })).toBe(
      'groups holds a name that is not a valid group name (received "\\\\u202eevil")',
    )
    expect(await message({ scim: { ...PROFILE, nickname: 'x' } })).toBe(
      'scim has an unknown field "nickname"',
    )
    const { department: _, ...withoutDepartment } = PROFILE
    expect(await message({ scim: withoutDepartment })).toBe(
      'scim.department is required (null when empty)',
    )
    expect(
      await message({
        scim: { ...PROFILE, other_emails: [{ value: 'nope', type: null, display: null }] },
      }),
    ).toBe('scim.other_emails[0].value must be an email address')
    expect(await message({ username: ' spaced ' })).toStartWith('username must be 1–254 characters')
  })

  test('a username is a sign-in name: no other row or user may have it as email or username', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Old', email: 'old@example.com' })
    const validator = new RowValidator(t.deps.users)
    const check = (line: number, value: Record<string, unknown>) =>
      validator.check(line, { name: 'U', ...value })
    expect(await check(1, { email: 'a@example.com', username: 'ace' })).toMatchObject({
      username: 'ace',
    })
    expect(await check(2, { email: 'b@example.com', username: 'ACE' })).toEqual({
      line: 2,
      message: 'username ACE is already on line 1',
    })
    expect(await check(3, { email: 'c@example.com', username: 'a@example.com' })).toEqual({
      line: 3,
      message: 'username a@example.com is already on line 1',
    })
    expect(await check(4, { email: 'ace@example.com', username: 'old@example.com' })).toEqual({
      line: 4,
      message: 'a user with username old@example.com already exists',
    })
    // A username that is the user's own email is no second name.
    expect(await check(5, { email: 'e@example.com', username: 'E@example.com' })).toMatchObject({
      username: 'E@example.com',
    })
  })
})

/** The export's text as lines, with the users given as one batch. */
async function exportLines(
  users: ExportedUser[],
  format: TransferFormat,
  withHashes: boolean,
  leftOut?: LeftOut,
): Promise<string[]> {
  async function* batches() {
    yield users
  }
  const options = { passwordHashes: withHashes, scimProfiles: true }
  const text = (await Array.fromAsync(exportChunks(batches(), format, options, leftOut))).join('')
  return text.split(/(?<=\n)/)
}

const PROFILE = {
  external_id: 'okta-00u1',
  given_name: 'Grace',
  family_name: 'Hopper',
  formatted_name: null,
  primary_email_type: 'work',
  other_emails: [{ value: 'grace@home.example', type: 'home', display: null }],
  employee_number: '7',
  department: 'Navy',
  manager_id: null,
}

/** An exported user: a member with nothing set beyond what is given. */
const exported = (fields: Partial<ExportedUser> & { id: number; name: string; email: string }) => ({
  username: fields.email,
  active: true,
  role: 'member' as const,
  email_verified_at: null,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  groups: [],
  scim: null,
  password_hash: null,
  ...fields,
})

describe('RowValidator with keepIds', () => {
  test('each row needs a whole positive id, once in the file; without keepIds an id is ignored', async () => {
    await using t = await makeTestApp()
    const validator = new RowValidator(t.deps.users, { keepIds: true })
    let n = 0
    const check = async (value: Record<string, unknown>) => {
      const result = await validator.check(++n, { name: 'U', email: `u${n}@example.com`, ...value })
      return 'message' in result ? result.message : result.id
    }
    expect(await check({ id: 7 })).toBe(7)
    expect(await check({ id: '8' })).toBe(8)
    expect(await check({ id: 7 })).toBe('id 7 is already on line 1')
    expect(await check({})).toBe('id is required with --keep-ids')
    for (const id of [0, -1, 1.5, '08', 2 ** 31]) {
      expect(await check({ id })).toStartWith('id must be a whole number from 1 to 2147483647')
    }
    const ignoring = new RowValidator(t.deps.users)
    expect(await ignoring.check(1, { name: 'U', email: 'x@example.com', id: 7 })).toMatchObject({
      id: null,
    })
  })
})

describe('exportChunks', () => {
  const users = [
    exported({
      id: 1,
      name: '=HYPERLINK("http://evil")',
      email: 'a@x.io',
      username: 'ace',
      active: false,
      role: 'admin',
      email_verified_at: '2026-01-02T00:00:00.000Z',
      updated_at: '2026-01-03T00:00:00.000Z',
      groups: ['Engineering', 'Ops'],
      scim: PROFILE,
      password_hash: HASH,
    }),
    exported({ id: 2, name: 'Plain, "quoted"', email: 'b@x.io' }),
  ]

  test('JSON Lines: every field of the record, groups by name, the SCIM profile; no hashes unless asked', async () => {
    const lines = await exportLines(users, 'jsonl', false)
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      {
        id: 1,
        name: '=HYPERLINK("http://evil")',
        email: 'a@x.io',
        username: 'ace',
        active: false,
        role: 'admin',
        email_verified_at: '2026-01-02T00:00:00.000Z',
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-03T00:00:00.000Z',
        groups: ['Engineering', 'Ops'],
        scim: PROFILE,
      },
      {
        id: 2,
        name: 'Plain, "quoted"',
        email: 'b@x.io',
        username: 'b@x.io',
        active: true,
        role: 'member',
        email_verified_at: null,
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-01T00:00:00.000Z',
        groups: [],
        scim: null,
      },
    ])
    expect(JSON.parse((await exportLines(users, 'jsonl', true))[0] as string).password_hash).toBe(
      HASH,
    )
  })

  test('CSV with a header, quoting and the formula guard; it reads back to the same values; what it leaves out is counted', async () => {
    const leftOut = { groups: 0, scim: 0 }
    const text = (await exportLines(users, 'csv', true, leftOut)).join('')
    expect(text.split('\r\n')[0]).toBe(
      'id,name,email,username,active,role,email_verified_at,created_at,updated_at,password_hash',
    )
    expect(text).toContain(`1,"'=HYPERLINK(""http://evil"")",a@x.io,ace,false,admin`)
    expect(leftOut).toEqual({ groups: 1, scim: 1 })
    const back = await records(text, 'csv', 4)
    expect(back).toEqual([
      {
        line: 2,
        value: {
          id: '1',
          name: '=HYPERLINK("http://evil")',
          email: 'a@x.io',
          username: 'ace',
          active: false,
          role: 'admin',
          email_verified_at: '2026-01-02T00:00:00.000Z',
          created_at: '2026-01-01T00:00:00.000Z',
          updated_at: '2026-01-03T00:00:00.000Z',
          password_hash: HASH,
        },
      },
      {
        line: 3,
        value: {
          id: '2',
          name: 'Plain, "quoted"',
          email: 'b@x.io',
          username: 'b@x.io',
          active: true,
          role: 'member',
          created_at: '2026-01-01T00:00:00.000Z',
          updated_at: '2026-01-01T00:00:00.000Z',
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
  const user = (id: number, name: string): ExportedUser =>
    exported({ id, name, email: `u${id}@example.com` })
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
      const options = { passwordHashes: false, scimProfiles: false }
      for await (const chunk of exportChunks(batches(), format, options)) text += chunk
      if (format === 'jsonl') {
        // One record per line, whatever line separators a name holds.
        expect(text.split(/\r\n|\r|\n|\u2028|\u2029/).filter(Boolean)).toHaveLength(names.length)
      }
      const read = await records(text, format)
      expect(read.map((record) => ('value' in record ? record.value.name : record))).toEqual(names)
    })
  }
})

/** Imports an export's text as `roster users import` does (hashes given, none to make). */
async function importText(t: TestApp, text: string, format: TransferFormat, keepIds = false) {
  const validator = new RowValidator(t.deps.users, { keepIds })
  const read = await records(text, format, 4096)
  const rows = await validator.checkBatch(read.map((record) => record as never))
  const problems = rows.filter((row) => 'message' in row)
  expect(problems).toEqual([])
  const users = rows.map((row) => importedUser(row as ImportRow, (row as ImportRow).passwordHash))
  return await t.deps.users.insertMany(users, { allOrNothing: true })
}

async function exportText(t: TestApp, format: TransferFormat, leftOut?: LeftOut) {
  const options = { passwordHashes: true, scimProfiles: true }
  return (
    await Array.fromAsync(exportChunks(t.deps.users.exportAll(), format, options, leftOut))
  ).join('')
}

/** The lines with their ids taken out: a fresh database gives its own. */
const withoutIds = (text: string) => text.replace(/^\{"id":\d+,/gm, '{').replace(/^\d+,/gm, '')

/**
 * A roster with one of everything a user record holds: an admin with a verified address, a
 * deactivated member in two groups, a user provisioned by SCIM (profile, other emails,
 * enterprise fields, username), one provisioned with an empty profile, a group nobody is in.
 */
async function richRoster(t: TestApp) {
  const key = await apiKey(t)
  const headers = { 'x-api-key': key }
  const scim = { authorization: `Bearer ${key}`, 'content-type': 'application/scim+json' }
  const admin = await t.post(
    '/users',
    { name: 'Ada', email: 'ada@example.com', password: PASSWORD, role: 'admin' },
    { headers },
  )
  expect(admin.status).toBe(201)
  await t.deps.users.verifyEmail(admin.body.id, 'ada@example.com', SYSTEM)
  const bo = await t.post('/users', { name: 'Bo', email: 'bo@example.com' }, { headers })
  expect(
    (await t.call('PATCH', `/users/${bo.body.id}`, { json: { active: false }, headers })).status,
  ).toBe(200)
  // A user deleted: the ids that follow have a gap a move keeps (with keepIds).
  const gone = await t.post('/users', { name: 'Gone', email: 'gone@example.com' }, { headers })
  expect((await t.call('DELETE', `/users/${gone.body.id}`, { headers })).status).toBe(200)
  const grace = await t.call('POST', '/scim/v2/Users', {
    headers: scim,
    json: {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE_SCHEMA],
      userName: 'grace.h',
      externalId: 'okta-00u1',
      name: { givenName: 'Grace', familyName: 'Hopper', formatted: 'Grace B. Hopper' },
      displayName: 'Grace Hopper',
      emails: [
        { value: 'grace@example.com', type: 'work', primary: true },
        { value: 'grace@home.example', type: 'home' },
      ],
      [ENTERPRISE_SCHEMA]: { department: 'Navy', employeeNumber: '7', manager: { value: 'm-1' } },
    },
  })
  expect(grace.status).toBe(201)
  const bare = await t.call('POST', '/scim/v2/Users', {
    headers: scim,
    json: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'cy@example.com' },
  })
  expect(bare.status).toBe(201)
  for (const name of ['Engineering', 'Ops', 'Empty']) {
    expect((await t.post('/groups', { name }, { headers })).status).toBe(201)
  }
  for (const [group, user] of [
    [1, bo.body.id],
    [2, bo.body.id],
    [2, Number(grace.body.id)],
  ]) {
    expect((await t.call('PUT', `/groups/${group}/members/${user}`, { headers })).status).toBe(200)
  }
}

describe('export then import into a fresh database loses nothing', () => {
  test('JSON Lines: every field of every user, groups by name, SCIM profiles, hashes; the second export is the first but for ids', async () => {
    await using from = await makeTestApp()
    await richRoster(from)
    const first = await exportText(from, 'jsonl')
    await using to = await makeTestApp()
    expect(await importText(to, first, 'jsonl')).toEqual({ inserted: 4, conflicts: [] })
    const second = await exportText(to, 'jsonl')
    expect(withoutIds(second)).toBe(withoutIds(first))
    // The record as the API shows it, and what SCIM shows, came across too.
    const lines = first
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.map((user) => [user.role, user.active, user.username, user.groups])).toEqual([
      ['admin', true, 'ada@example.com', []],
      ['member', false, 'bo@example.com', ['Engineering', 'Ops']],
      ['member', true, 'grace.h', ['Ops']],
      ['member', true, 'cy@example.com', []],
    ])
    expect(lines[0].email_verified_at).toMatch(/Z$/)
    expect(lines[2].scim).toMatchObject({ external_id: 'okta-00u1', department: 'Navy' })
    expect(lines[3].scim).toMatchObject({ external_id: null })
    expect(lines[1].scim).toBeNull()
    // Groups are made on import; one nobody was in is not a user's to carry.
    const groups = await to.get('/groups', { headers: { 'x-api-key': await apiKey(to) } })
    expect(groups.body.data.map((group: { name: string }) => group.name)).toEqual([
      'Engineering',
      'Ops',
    ])
  })

  test('into groups that exist already: found by name (any case), not made again, their version moved on', async () => {
    await using from = await makeTestApp()
    await richRoster(from)
    await using to = await makeTestApp()
    const headers = { 'x-api-key': await apiKey(to) }
    const ops = await to.post('/groups', { name: 'OPS' }, { headers })
    await importText(to, await exportText(from, 'jsonl'), 'jsonl')
    const after = await to.get(`/groups/${ops.body.id}`, { headers })
    expect(after.body.name).toBe('OPS')
    expect(after.body.members).toHaveLength(2)
    expect(after.headers.get('etag')).not.toBe(ops.headers.get('etag'))
    const all = await to.get('/groups', { headers })
    expect(all.body.data.map((group: { name: string }) => group.name)).toEqual([
      'OPS',
      'Engineering',
    ])
  })

  test('CSV: every field but groups and SCIM profiles, which the export counts as left out', async () => {
    await using from = await makeTestApp()
    await richRoster(from)
    const leftOut = { groups: 0, scim: 0 }
    const first = await exportText(from, 'csv', leftOut)
    expect(leftOut).toEqual({ groups: 2, scim: 2 })
    await using to = await makeTestApp()
    await importText(to, first, 'csv')
    expect(withoutIds(await exportText(to, 'csv'))).toBe(withoutIds(first))
  })

  test('with keepIds every user keeps its id too: the second export is the first, byte for byte; the next user comes after the highest', async () => {
    await using from = await makeTestApp()
    await richRoster(from)
    const first = await exportText(from, 'jsonl')
    await using to = await makeTestApp()
    expect(await importText(to, first, 'jsonl', true)).toEqual({ inserted: 4, conflicts: [] })
    expect(await exportText(to, 'jsonl')).toBe(first)
    expect(first.match(/^\{"id":\d+/gm)).toEqual(['{"id":1', '{"id":2', '{"id":4', '{"id":5'])
    const next = await to.post(
      '/users',
      { name: 'Next', email: 'next@example.com' },
      { headers: { 'x-api-key': await apiKey(to) } },
    )
    expect(next.body.id).toBe(6)
  })
})
