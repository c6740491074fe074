import { describe, expect, test } from 'bun:test'
import type { Backend } from '../../src/backends/index'
import type { NewUpload } from '../../src/uploads/records'
import { codeOf, twoBackends } from '../helpers/stores'

// The upload records' contract (the rows of uploads and their files; the bytes are the file
// store's, test/storage/contract.ts), on SQLite (npm test) and on PostgreSQL with two
// instances (npm run test:postgres). See test/helpers/stores.ts.

let files = 0
function newUpload(id: string, fileCount = 2): NewUpload {
  return {
    id,
    description: `upload ${id}`,
    isPublic: id.endsWith('p'),
    owner: { userId: null, keyId: null },
    files: Array.from({ length: fileCount }, (_, i) => ({
      fileId: `fil_${String(++files).padStart(22, '0')}`,
      size: 10 + i,
      sha256: 'a'.repeat(64),
      field: `f${i}`,
      filename: `f${i}.txt`,
      contentType: 'text/plain',
    })),
  }
}

const insert = (backend: Backend, upload: NewUpload) => backend.uploadRecords.insert(upload)

describe('upload records contract (two instances where the backend is shared)', () => {
  test('an upload registered on one instance reads back on the other, its files in order', async () => {
    await using env = await twoBackends()
    const upload = newUpload('upl_onep')
    const inserted = await insert(env.a, upload)
    const read = await env.b.uploadRecords.get('upl_onep')
    expect(read).toEqual(inserted)
    expect(read).toMatchObject({ id: 'upl_onep', description: 'upload upl_onep', isPublic: true })
    expect(read?.files.map((file) => file.field)).toEqual(['f0', 'f1'])
    const file = await env.b.uploadRecords.file(upload.files[1]?.fileId as string)
    expect(file).toMatchObject({ uploadId: 'upl_onep', isPublic: true, size: 11, field: 'f1' })
    expect(await env.b.uploadRecords.get('upl_none')).toBeNull()
    expect(await env.b.uploadRecords.file('fil_none')).toBeNull()
  })

  test('registered names exactly the files that have rows', async () => {
    await using env = await twoBackends()
    const upload = newUpload('upl_two')
    await insert(env.a, upload)
    const ids = upload.files.map((file) => file.fileId)
    const known = await env.b.uploadRecords.registered([...ids, 'fil_unknown'])
    expect([...known].sort()).toEqual(ids.sort())
    expect([...(await env.b.uploadRecords.registered([]))]).toEqual([])
  })

  test('a registration that fails (a file id already taken) registers nothing', async () => {
    await using env = await twoBackends()
    const first = newUpload('upl_first')
    await insert(env.a, first)
    const clash = { ...newUpload('upl_clash'), files: [...newUpload('x').files, first.files[0]] }
    await expect(insert(env.b, clash as NewUpload)).rejects.toThrow()
    expect(await env.a.uploadRecords.get('upl_clash')).toBeNull()
    expect(await env.a.uploadRecords.count()).toBe(1)
  })

  test('the list is newest first (or oldest), paged with its total', async () => {
    await using env = await twoBackends()
    for (const id of ['upl_1', 'upl_2', 'upl_3']) {
      await insert(env.a, newUpload(id, 1))
      env.clock.advance(1000)
    }
    const page = await env.b.uploadRecords.list({ limit: 2, offset: 0 })
    expect(page.total).toBe(3)
    expect(page.data.map((upload) => upload.id)).toEqual(['upl_3', 'upl_2'])
    expect(page.data[0]?.files).toHaveLength(1)
    const rest = await env.b.uploadRecords.list({ limit: 2, offset: 2 })
    expect(rest.data.map((upload) => upload.id)).toEqual(['upl_1'])
    const oldest = await env.b.uploadRecords.list({ limit: 2, offset: 1, first: 'oldest' })
    expect(oldest.data.map((upload) => upload.id)).toEqual(['upl_2', 'upl_3'])
  })

  test('one upload removed on both instances at once: one gets its file ids, the other null', async () => {
    await using env = await twoBackends()
    for (let round = 0; round < 5; round++) {
      const upload = newUpload(`upl_race${round}`)
      await insert(env.a, upload)
      const outcomes = await Promise.allSettled([
        env.a.uploadRecords.remove(upload.id),
        env.b.uploadRecords.remove(upload.id),
      ])
      expect(outcomes.map(codeOf)).toEqual(['ok', 'ok'])
      const answers = outcomes.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value)
      const ids = upload.files.map((file) => file.fileId).sort()
      expect(
        answers.map((answer) => (answer === null ? null : (answer as string[]).sort())),
      ).toContainEqual(ids)
      expect(answers).toContainEqual(null)
      expect(await env.b.uploadRecords.file(upload.files[0]?.fileId as string)).toBeNull()
    }
    expect(await env.a.uploadRecords.count()).toBe(0)
  })
})
