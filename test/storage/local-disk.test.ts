import { describe, expect, test } from 'bun:test'
import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LocalDiskStore } from '../../src/storage/local-disk'
import { tempDir } from '../helpers/app'
import { randomBytes } from '../helpers/multipart'
import { chunks, fileStoreContract, roomy } from './contract'

function localDisk() {
  const dir = tempDir()
  return {
    store: new LocalDiskStore(dir.path),
    dir: dir.path,
    beforeSweep: () => {},
    [Symbol.dispose]: () => dir[Symbol.dispose](),
    [Symbol.asyncDispose]: async () => dir[Symbol.dispose](),
  }
}

fileStoreContract('local disk', async () => localDisk())

describe('local disk', () => {
  test('check() fails when .incoming is missing or is not a directory, and passes again once it is', () => {
    using made = localDisk()
    expect(() => made.store.check()).not.toThrow()
    rmSync(join(made.dir, '.incoming'), { recursive: true })
    expect(() => made.store.check()).toThrow()
    writeFileSync(join(made.dir, '.incoming'), 'a file, not a directory')
    expect(() => made.store.check()).toThrow()
  })

  test('a received file is pending: not there until it is placed', async () => {
    using made = localDisk()
    const received = await made.store.receive(chunks(randomBytes(10)), roomy())
    expect(await made.store.exists(received.fileId)).toBe(false)
    made.store.place([received.fileId])
    expect(await made.store.exists(received.fileId)).toBe(true)
  })

  test('nothing outside the store names a path: placed files are <dir>/<file id>', async () => {
    using made = localDisk()
    const received = await made.store.receive(chunks(randomBytes(10)), roomy())
    made.store.place([received.fileId])
    expect(readdirSync(made.dir).sort()).toEqual(['.incoming', received.fileId])
  })
})
