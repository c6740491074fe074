import { describe, expect, test } from 'bun:test'
import type { FileStore } from '../../src/storage/file-store'
import { randomBytes, sha256 } from '../helpers/multipart'

/** A store under test; `beforeSweep` ages what is pending past any grace the store allows. */
export interface MadeStore extends AsyncDisposable {
  store: FileStore
  beforeSweep(): void
}

export async function* chunks(data: Uint8Array, size = 64 * 1024) {
  for (let start = 0; start < data.byteLength; start += size)
    yield data.subarray(start, start + size)
}

export const roomy = () => ({ maxFileSize: 1e9, budget: { remaining: 1e9 } })

/**
 * What every FileStore promises, whatever it stores on: the same cases will run against the
 * object-storage one (test/postgres/s3-store.test.ts).
 */
export function fileStoreContract(name: string, make: () => Promise<MadeStore>) {
  describe(`${name}: the FileStore contract`, () => {
    test('receive counts and hashes; a placed file reads back whole and by range', async () => {
      await using made = await make()
      const data = randomBytes(300_000)
      const received = await made.store.receive(chunks(data), roomy())
      expect(received).toMatchObject({ size: data.byteLength, sha256: sha256(data) })
      expect(received.fileId).toMatch(/^fil_[A-Za-z0-9_-]{22}$/)
      made.store.place([received.fileId])
      await made.store.committed([received.fileId])
      const whole = await made.store.read(received.fileId, null)
      expect(new Uint8Array(await new Response(whole).arrayBuffer())).toEqual(data)
      const part = await made.store.read(received.fileId, { start: 10, end: 19 })
      expect(new Uint8Array(await new Response(part).arrayBuffer())).toEqual(data.subarray(10, 20))
    })

    test('limits: the file limit and the shared budget are 413, and leave nothing', async () => {
      await using made = await make()
      const overFile = made.store.receive(chunks(randomBytes(2000), 500), {
        maxFileSize: 1000,
        budget: { remaining: 1e9 },
      })
      expect(overFile).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
      await overFile.catch(() => {})
      const budget = { remaining: 1500 }
      const first = await made.store.receive(chunks(randomBytes(1000)), {
        maxFileSize: 1e9,
        budget,
      })
      const second = made.store.receive(chunks(randomBytes(1000)), { maxFileSize: 1e9, budget })
      expect(second).rejects.toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE' })
      await second.catch(() => {})
      // Only the first is left (pending): the sweep finds exactly one file to remove.
      made.beforeSweep()
      expect(await made.store.sweep(async () => new Set())).toBe(1)
      expect(await made.store.exists(first.fileId)).toBe(false)
    })

    test('discard removes pending and placed files alike; missing ones are fine', async () => {
      await using made = await make()
      const pending = await made.store.receive(chunks(randomBytes(10)), roomy())
      const placed = await made.store.receive(chunks(randomBytes(10)), roomy())
      made.store.place([placed.fileId])
      await made.store.discard([pending.fileId, placed.fileId, 'fil_neverExistedAAAAAAAAA'])
      expect(await made.store.exists(placed.fileId)).toBe(false)
      made.beforeSweep()
      expect(await made.store.sweep(async () => new Set())).toBe(0)
    })

    test('sweep keeps placed files the caller knows and removes the rest', async () => {
      await using made = await make()
      const known = await made.store.receive(chunks(randomBytes(10)), roomy())
      const orphan = await made.store.receive(chunks(randomBytes(10)), roomy())
      await made.store.receive(chunks(randomBytes(10)), roomy())
      made.store.place([known.fileId, orphan.fileId])
      made.beforeSweep()
      expect(await made.store.sweep(async () => new Set([known.fileId]))).toBe(2)
      expect(await made.store.exists(known.fileId)).toBe(true)
    })
  })
}
