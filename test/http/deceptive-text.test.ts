import { describe, expect, test } from 'bun:test'
import { expectEnvelope, makeTestApp, storedFiles } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { multipartBody, multipartType } from '../helpers/multipart'

// Section 11: bidirectional controls and invisible characters make text show as something it
// is not; names, filenames and descriptions refuse them, and the answer shows them escaped.
const SPOOFS = [
  ['U+202E right-to-left override', 'invoice\u202efdp.exe', 'invoice\\u202efdp.exe'],
  ['U+2066 left-to-right isolate', 'a\u2066b', 'a\\u2066b'],
  ['U+200B zero width space', 'ad\u200bmin', 'ad\\u200bmin'],
  ['U+2060 word joiner', 'ad\u2060min', 'ad\\u2060min'],
  ['U+FEFF byte order mark', '\ufeffadmin', '\\ufeffadmin'],
] as const

describe('bidirectional controls and invisible characters are refused, and shown escaped', () => {
  test.each(SPOOFS)('%s in a user name: 422, nothing stored', async (_, text, escaped) => {
    await using t = await makeTestApp()
    const error = expectEnvelope(
      await t.post('/users', { name: text, email: 'a@example.com' }),
      422,
      'VALIDATION_ERROR',
    )
    expect(error.details).toEqual([
      {
        field: 'name',
        message:
          'must be 1–200 characters after trimming, with no control characters, bidirectional controls or invisible characters',
        received: escaped,
      },
    ])
    expect((await t.get('/users')).body.pagination.total).toBe(0)
  })

  test('in a PATCHed name and an API key name', async () => {
    await using t = await makeTestApp()
    await t.post('/users', { name: 'Ada', email: 'a@example.com' })
    expectEnvelope(
      await t.call('PATCH', '/users/1', { json: { name: 'A\u202eda' } }),
      422,
      'VALIDATION_ERROR',
    )
    const key = await apiKey(t)
    const created = await t.post(
      '/api-keys',
      { name: 'ci\u200b' },
      { headers: { 'x-api-key': key } },
    )
    expect(expectEnvelope(created, 422, 'VALIDATION_ERROR').details[0]?.received).toBe('ci\\u200b')
  })

  test('in a multipart filename, a raw upload’s filename and a description: 422, no file kept', async () => {
    await using t = await makeTestApp()
    const multipart = await t.call('POST', '/upload', {
      body: multipartBody([{ name: 'file', filename: 'invoice\u202efdp.exe', data: 'MZ' }]),
      headers: { 'content-type': multipartType() },
    })
    expect(expectEnvelope(multipart, 422, 'VALIDATION_ERROR').details).toEqual([
      {
        field: 'file.filename',
        message: 'must not contain bidirectional controls or invisible characters',
        received: 'invoice\\u202efdp.exe',
      },
    ])
    const rawUpload = await t.call(
      'POST',
      `/upload?filename=${encodeURIComponent('a\u2067.txt')}`,
      {
        body: 'x',
        headers: { 'content-type': 'application/octet-stream' },
      },
    )
    expect(expectEnvelope(rawUpload, 422, 'VALIDATION_ERROR').details[0]?.field).toBe('filename')
    const disposition = await t.call('POST', '/upload', {
      body: 'x',
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent('x\u202e.pdf')}`,
      },
    })
    expectEnvelope(disposition, 422, 'VALIDATION_ERROR')
    const described = await t.call('POST', '/upload', {
      body: multipartBody([
        { name: 'file', filename: 'a.txt', data: 'x' },
        { name: 'description', data: 'harmless\u202e' },
      ]),
      headers: { 'content-type': multipartType() },
    })
    expect(expectEnvelope(described, 422, 'VALIDATION_ERROR').details[0]).toMatchObject({
      field: 'description',
      received: 'harmless\\u202e',
    })
    expect(await storedFiles(t.deps)).toEqual({ placed: [], pending: [] })
    expect(await t.deps.uploads.count()).toBe(0)
  })

  test('joiners stay: scripts and emoji need U+200C and U+200D', async () => {
    await using t = await makeTestApp()
    for (const name of ['👩\u200d💻 Ada', 'می\u200cخواهم']) {
      expect((await t.post('/users', { name, email: `${name.length}@example.com` })).status).toBe(
        201,
      )
    }
  })
})
