import {
  accessSync,
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { type ByteRange, type FileStore, storageError } from './file-store'

const INCOMING = '.incoming'

/**
 * Files on local disk: `<dir>/<file id>` once written, `<dir>/.incoming/<file id>` while they
 * stream in. A file is put in place by a rename (atomic on one filesystem) after an fsync, and
 * the directory is synced, so a file under its id is whole and survives a crash.
 */
export class LocalDiskStore implements FileStore {
  readonly description: string
  readonly shared = false
  private readonly incoming: string

  constructor(private readonly dir: string) {
    this.description = `disk ${dir}`
    this.incoming = join(dir, INCOMING)
    mkdirSync(this.incoming, { recursive: true })
  }

  async write(fileId: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    const partial = join(this.incoming, fileId)
    const handle = await open(partial, 'wx', 0o640).catch((error: unknown) => {
      throw storageError(error)
    })
    try {
      for await (const chunk of chunks) await writeAll(handle, chunk)
      await handle.sync()
      await handle.close()
      renameSync(partial, join(this.dir, fileId))
      syncDirectory(this.dir)
    } catch (error) {
      await handle.close().catch(() => {})
      throw storageError(error)
    }
  }

  read(fileId: string, range: ByteRange | null): Promise<Blob> {
    const file = Bun.file(join(this.dir, fileId))
    return Promise.resolve(range === null ? file : file.slice(range.start, range.end + 1))
  }

  delete(fileId: string): Promise<void> {
    for (const path of [join(this.incoming, fileId), join(this.dir, fileId)]) {
      rmSync(path, { force: true, recursive: true })
    }
    return Promise.resolve()
  }

  async *list(): AsyncGenerator<string> {
    const names = new Set(readdirSync(this.incoming))
    for (const name of readdirSync(this.dir)) if (name !== INCOMING) names.add(name)
    yield* names
  }

  check(): void {
    // Files stream into .incoming first: it must be there, a directory, and writable (root
    // passes access() on a plain file, hence the stat).
    if (!statSync(this.incoming).isDirectory())
      throw new Error(`${this.incoming} is not a directory`)
    accessSync(this.incoming, constants.W_OK)
  }
}

async function writeAll(
  handle: Awaited<ReturnType<typeof open>>,
  chunk: Uint8Array,
): Promise<void> {
  let offset = 0
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset)
    offset += bytesWritten
  }
}

function syncDirectory(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
