import { describe, expect, test } from 'bun:test'
import type { FileStore } from '../../src/storage/file-store'
import { createUploadFiles, PENDING_IDLE_MS, type PendingFiles } from '../../src/uploads/files'
import { randomBytes, sha256 } from '../helpers/multipart'

/** A driver under test, with the list of pending files a shared one needs. */
export interface MadeStore extends AsyncDisposable {
  store: FileStore
  pending: PendingFiles | null
}

export async function* chunks(data: Uint8Array, size = 64 * 1024) {
  for (let start = 0; start < data.byteLength; start += size)
    yield data.subarray(start, start + size)
}

export const roomy = () => ({ maxFileSize: 1e9, budget: { remaining: 1e9 } })

const bytesOf = async (body: Blob | ReadableStream<Uint8Array>) =>
  new Uint8Array(await new Response(body).arrayBuffer())

async function listed(store: FileStore): Promise<string[]> {
  const ids: string[] = []
  for await (const id of store.list()) ids.push(id)
  return ids.sort()
}

/** The uploads' file life over a driver, with a clock the test can move past the idle time. */
export function lifeOn(made: MadeStore, registered: ReadonlySet<string> = new Set()) {
  let skew = 0
  const files = createUploadFiles({
    store: made.store,
    pending: made.pending,
    registered: async (ids) => new Set(ids.filter((id) => registered.has(id))),
    clock: () => Date.now() + skew,
  })
  return Object.assign(files, {
    /** Every pending file is now idle for longer than the sweep waits. */
    age: () => {
      skew = PENDING_IDLE_MS + 60_000
    },
  })
}

/**
 * What every FileStore driver promises, whatever it stores on, and what the uploads' file life
 * makes of it: the same cases run against the disk (test/storage/local-disk.test.ts) and a
 * bucket (test/postgres/s3-store.test.ts).
 */
export function fileStoreContract(name: string, make: () => Promise<MadeStore>) {
  describe(`${name}: the FileStore driver`, () => {
    test('a written file reads back whole and by range, and is listed', async () => {
      await using made = await make()
      const data = randomBytes(300_000)
      await made.store.write('fil_writtenAAAAAAAAAAAAAA', chunks(data))
      expect(await bytesOf(await made.store.read('fil_writtenAAAAAAAAAAAAAA', null))).toEqual(data)
      const part = await made.store.read('fil_writtenAAAAAAAAAAAAAA', { start: 10, end: 19 })
      expect(await bytesOf(part)).toEqual(data.subarray(10, 20))
      expect(await listed(made.store)).toEqual(['fil_writtenAAAAAAAAAAAAAA'])
    })

    test('delete removes a file; a missing one is fine', async () => {
      await using made = await make()
      await made.store.write('fil_deletedAAAAAAAAAAAAAA', chunks(randomBytes(10)))
      await made.store.delete('fil_deletedAAAAAAAAAAAAAA')
      await made.store.delete('fil_neverExistedAAAAAAAAA')
      expect(await listed(made.store)).toEqual([])
    })

    test('a write whose source fails rejects, and delete removes whatever it left', async () => {
      await using made = await make()
      async function* failing() {
        yield randomBytes(1000)
        throw new Error('the client went away')
      }
      expect(made.store.write('fil_failedAAAAAAAAAAAAAAA', failing())).rejects.toThrow()
      await made.store.write('fil_failedAAAAAAAAAAAAAAA', failing()).catch(() => {})
      await made.store.delete('fil_failedAAAAAAAAAAAAAAA')
      expect(await listed(made.store)).toEqual([])
    })
  })

  describe(`${name}: the life of an uploaded file`, () => {
    test('receive counts and hashes what it writes', async () => {
      await using made = await make()
      const data = randomBytes(300_000)
      const received = await lifeOn(made).receive(chunks(data), roomy())
      expect(received).toEqual({
        fileId: expect.stringMatching(/^fil_[A-Za-z0-9_-]{22}$/),
        size: data.byteLength,
        sha256: sha256(data),
      })
      expect(await bytesOf(await made.store.read(received.fileId, null))).toEqual(data)
    })

    test('the file limit and the shared budget are 413 and, once cleaned up, leave nothing of that file', async () => {
      await using made = await make()
      const files = lifeOn(made)
      const overFile = files.receive(chunks(randomBytes(2000), 500), {
        maxFileSize: 1000,
        budget: { remaining: 1e9 },
      })
      expect(overFile).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
      await overFile.catch(() => {})
      const budget = { remaining: 1500 }
      const first = await files.receive(chunks(randomBytes(1000)), { maxFileSize: 1e9, budget })
      const second = files.receive(chunks(randomBytes(1000)), { maxFileSize: 1e9, budget })
      expect(second).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
      await second.catch(() => {})
      await files.settled()
      expect(await listed(made.store)).toEqual([first.fileId])
    })

    test('a source that fails leaves nothing once cleaned up, and its error comes out as it is', async () => {
      await using made = await make()
      const gone = Object.assign(new Error('the client went away'), { name: 'AbortError' })
      async function* failing() {
        yield randomBytes(1000)
        throw gone
      }
      const files = lifeOn(made)
      expect(files.receive(failing(), roomy())).rejects.toBe(gone)
      await files.receive(failing(), roomy()).catch(() => {})
      await files.settled()
      expect(await listed(made.store)).toEqual([])
    })

    test('discard removes files; missing ones are fine', async () => {
      await using made = await make()
      const files = lifeOn(made)
      const one = await files.receive(chunks(randomBytes(10)), roomy())
      const two = await files.receive(chunks(randomBytes(10)), roomy())
      await files.committed([two.fileId])
      await files.discard([one.fileId, two.fileId, 'fil_neverExistedAAAAAAAAA'])
      expect(await listed(made.store)).toEqual([])
      files.age()
      expect(await files.sweep()).toBe(0)
    })

    test('the sweep removes the files no row names and keeps the ones a row names', async () => {
      await using made = await make()
      const registered = new Set<string>()
      const files = lifeOn(made, registered)
      const known = await files.receive(chunks(randomBytes(10)), roomy())
      await files.receive(chunks(randomBytes(10)), roomy())
      await files.receive(chunks(randomBytes(10)), roomy())
      registered.add(known.fileId)
      files.age()
      expect(await files.sweep()).toBe(2)
      expect(await listed(made.store)).toEqual([known.fileId])
      expect(await files.sweep()).toBe(0)
    })
  })
}
