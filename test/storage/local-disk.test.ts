import { describe, expect, test } from 'bun:test'
import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FileStore } from '../../src/storage/file-store'
import { LocalDiskStore } from '../../src/storage/local-disk'
import { tempDir } from '../helpers/app'
import { randomBytes, sha256 } from '../helpers/multipart'

async function* chunks(data: Uint8Array, size = 64 * 1024) {
  for (let start = 0; start < data.byteLength; start += size)
    yield data.subarray(start, start + size)
}

const roomy = () => ({ maxFileSize: 1e9, budget: { remaining: 1e9 } })

/**
 * What every FileStore promises, whatever it stores on: the same cases will run against the
 * object-storage one.
 */
function fileStoreContract(
  name: string,
  make: () => { store: FileStore; [Symbol.dispose]: () => void },
) {
  describe(`${name}: the FileStore contract`, () => {
    test('receive counts and hashes; a pending file is not readable until placed; Range via slice', async () => {
      using made = make()
      const data = randomBytes(300_000)
      const received = await made.store.receive(chunks(data), roomy())
      expect(received).toMatchObject({ size: data.byteLength, sha256: sha256(data) })
      expect(received.fileId).toMatch(/^fil_[A-Za-z0-9_-]{22}$/)
      expect(await made.store.exists(received.fileId)).toBe(false)
      made.store.place([received.fileId])
      const blob = made.store.open(received.fileId)
      expect(new Uint8Array(await blob.arrayBuffer())).toEqual(data)
      expect(new Uint8Array(await blob.slice(10, 20).arrayBuffer())).toEqual(data.subarray(10, 20))
    })

    test('limits: the file limit and the shared budget are 413, and leave nothing', async () => {
      using made = make()
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
      expect(await made.store.sweep(async () => new Set())).toBe(1)
      expect(await made.store.exists(first.fileId)).toBe(false)
    })

    test('discard removes pending and placed files alike; missing ones are fine', async () => {
      using made = make()
      const pending = await made.store.receive(chunks(randomBytes(10)), roomy())
      const placed = await made.store.receive(chunks(randomBytes(10)), roomy())
      made.store.place([placed.fileId])
      made.store.discard([pending.fileId, placed.fileId, 'fil_neverExistedAAAAAAAAA'])
      expect(await made.store.exists(placed.fileId)).toBe(false)
      expect(await made.store.sweep(async () => new Set())).toBe(0)
    })

    test('sweep keeps placed files the caller knows and removes the rest', async () => {
      using made = make()
      const known = await made.store.receive(chunks(randomBytes(10)), roomy())
      const orphan = await made.store.receive(chunks(randomBytes(10)), roomy())
      await made.store.receive(chunks(randomBytes(10)), roomy())
      made.store.place([known.fileId, orphan.fileId])
      expect(await made.store.sweep(async () => new Set([known.fileId]))).toBe(2)
      expect(await made.store.exists(known.fileId)).toBe(true)
    })
  })
}

function localDisk() {
  const dir = tempDir()
  return {
    store: new LocalDiskStore(dir.path),
    dir: dir.path,
    [Symbol.dispose]: () => dir[Symbol.dispose](),
  }
}

fileStoreContract('local disk', localDisk)

describe('local disk', () => {
  test('check() fails when .incoming is missing or is not a directory, and passes again once it is', () => {
    using made = localDisk()
    expect(() => made.store.check()).not.toThrow()
    rmSync(join(made.dir, '.incoming'), { recursive: true })
    expect(() => made.store.check()).toThrow()
    writeFileSync(join(made.dir, '.incoming'), 'a file, not a directory')
    expect(() => made.store.check()).toThrow()
  })

  test('nothing outside the store names a path: placed files are <dir>/<file id>', async () => {
    using made = localDisk()
    const received = await made.store.receive(chunks(randomBytes(10)), roomy())
    made.store.place([received.fileId])
    expect(readdirSync(made.dir).sort()).toEqual(['.incoming', received.fileId])
  })
})
