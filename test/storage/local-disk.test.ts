import { describe, expect, test } from 'bun:test'
import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LocalDiskStore } from '../../src/storage/local-disk'
import { tempDir } from '../helpers/app'
import { randomBytes } from '../helpers/multipart'
import { chunks, fileStoreContract } from './contract'

function localDisk() {
  const dir = tempDir()
  return {
    store: new LocalDiskStore(dir.path),
    pending: null,
    dir: dir.path,
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

  test('a file is under its id only once whole: it streams into .incoming first', async () => {
    using made = localDisk()
    let midway: string[] = []
    async function* observed() {
      yield randomBytes(10)
      midway = readdirSync(made.dir).filter((name) => name !== '.incoming')
      yield randomBytes(10)
    }
    await made.store.write('fil_wholeAAAAAAAAAAAAAAAA', observed())
    expect(midway).toEqual([])
    expect(readdirSync(made.dir).sort()).toEqual(['.incoming', 'fil_wholeAAAAAAAAAAAAAAAA'])
  })

  test('list names what a crash left in .incoming too, so the start-up sweep finds it', async () => {
    using made = localDisk()
    await made.store.write('fil_wholeAAAAAAAAAAAAAAAA', chunks(randomBytes(10)))
    writeFileSync(join(made.dir, '.incoming', 'fil_halfwrittenAAAAAAAAA'), 'partial')
    const names: string[] = []
    for await (const id of made.store.list()) names.push(id)
    expect(names.sort()).toEqual(['fil_halfwrittenAAAAAAAAA', 'fil_wholeAAAAAAAAAAAAAAAA'])
  })
})
