import { describe, expect, test } from 'bun:test'
import { exportChunks } from '../../../src/users/transfer'
import { expectEnvelope, makeTestApp } from '../../helpers/app'
import { apiKey, PASSWORD, signedIn } from '../../helpers/auth'

describe('GET /users/export (API key)', () => {
  test('the same lines as `roster users export`, as JSON Lines or CSV, with no password hash and no SCIM profile', async () => {
    await using t = await makeTestApp()
    const key = { 'x-api-key': await apiKey(t) }
    await t.post('/users', { name: '=HYPERLINK("x")', email: 'formula@example.com' })
    await t.post('/users', { name: 'Bob, "Jr."', email: 'bob@example.com', password: PASSWORD })
    for (const format of ['jsonl', 'csv'] as const) {
      const reply = await t.get(`/users/export?format=${format}`, { headers: key })
      expect(reply.status).toBe(200)
      const cli = (
        await Array.fromAsync(
          exportChunks(t.deps.users.exportAll(), format, {
            passwordHashes: false,
            scimProfiles: false,
          }),
        )
      ).join('')
      expect(reply.text).toBe(cli)
      expect(reply.text).not.toContain('argon2')
      expect(reply.headers.get('content-disposition')).toMatch(
        new RegExp(`^attachment; filename="roster-users-\\d{4}-\\d\\d-\\d\\d\\.${format}"$`),
      )
      expect(reply.headers.get('cache-control')).toBe('no-store')
    }
    const jsonl = await t.get('/v2/users/export', { headers: key })
    expect(jsonl.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8')
    expect(
      jsonl.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).email),
    ).toEqual(['formula@example.com', 'bob@example.com'])
    // The record's fields, groups by name; SCIM's profile is the scim scope's, not users:read's.
    expect(Object.keys(JSON.parse(jsonl.text.split('\n')[0] as string))).toEqual([
      'id',
      'name',
      'email',
      'username',
      'active',
      'role',
      'email_verified_at',
      'created_at',
      'updated_at',
      'groups',
    ])
    const csv = await t.get('/users/export?format=csv', { headers: key })
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    // A formula is defused for spreadsheets, as the CLI's export does.
    expect(csv.text).toContain(`"'=HYPERLINK(""x"")"`)
  })

  test('one snapshot, streamed: writes while it streams go through at once and are not in it', async () => {
    await using t = await makeTestApp()
    const key = { 'x-api-key': await apiKey(t) }
    for (let start = 0; start < 3000; start += 500) {
      await t.deps.users.insertMany(
        Array.from({ length: 500 }, (_, i) => ({
          name: `User ${start + i}`,
          email: `u${start + i}@example.com`,
          passwordHash: null,
        })),
        { allOrNothing: true },
      )
    }
    const response = await t.app.handle(
      new Request('http://localhost/users/export', { headers: key }),
    )
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    expect(first.done).toBe(false)
    // The export holds a read transaction on a connection of its own: a write is not held up.
    const created = await t.post('/users', { name: 'Late', email: 'late@example.com' })
    expect(created.status).toBe(201)
    let text = new TextDecoder().decode(first.value)
    for (;;) {
      const next = await reader.read()
      if (next.done) break
      text += new TextDecoder().decode(next.value)
    }
    const lines = text.trim().split('\n')
    expect(lines).toHaveLength(3000)
    expect(text).not.toContain('late@example.com')
    expect((await t.get('/users/export', { headers: key })).text).toContain('late@example.com')
  })

  test('a client that stops reading ends the snapshot; refusals are the envelope', async () => {
    await using t = await makeTestApp()
    const key = await apiKey(t)
    await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    const response = await t.app.handle(
      new Request('http://localhost/users/export', { headers: { 'x-api-key': key } }),
    )
    await (response.body as ReadableStream).cancel()
    const none = await t.get('/users/export')
    expectEnvelope(none, 401, 'UNAUTHORIZED')
    expect(none.headers.get('www-authenticate')).toStartWith('ApiKey')
    const { token } = await signedIn(t, 'bob@example.com')
    expectEnvelope(
      await t.get('/users/export', { headers: { authorization: `Bearer ${token}` } }),
      403,
      'FORBIDDEN',
    )
    const bad = await t.get('/users/export?format=xlsx', { headers: { 'x-api-key': key } })
    expect(expectEnvelope(bad, 422, 'VALIDATION_ERROR').details).toEqual([
      { field: 'format', message: 'must be one of jsonl, csv', received: 'xlsx' },
    ])
    // /users/{id} is untouched by the static route beside it.
    expect((await t.get('/users/1')).body.email).toBe('ada@example.com')
  })
})
