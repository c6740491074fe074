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
import { newId } from '../db/random-id'
import {
  type ByteRange,
  type FileStore,
  metered,
  type ReceivedFile,
  type ReceiveLimits,
  storageError,
} from './file-store'

const INCOMING = '.incoming'

/**
 * Files on local disk: `<dir>/<file id>` once placed, `<dir>/.incoming/<file id>` while they
 * stream in. A file is placed by a rename (atomic on one filesystem) and an fsync of the
 * directory, so a reader never sees a half-written file and a placed one survives a crash.
 */
export class LocalDiskStore implements FileStore {
  readonly description: string
  readonly sweepsWhileServing = false
  private readonly incoming: string

  constructor(private readonly dir: string) {
    this.description = `disk ${dir}`
    this.incoming = join(dir, INCOMING)
    mkdirSync(this.incoming, { recursive: true })
  }

  async receive(source: AsyncIterable<Uint8Array>, limits: ReceiveLimits): Promise<ReceivedFile> {
    const fileId = newId('fil_')
    const pending = join(this.incoming, fileId)
    const handle = await open(pending, 'wx', 0o640).catch((error: unknown) => {
      throw storageError(error)
    })
    const file = metered(source, limits)
    try {
      for await (const chunk of file.chunks) await writeAll(handle, chunk)
      await handle.sync()
      await handle.close()
      return { fileId, size: file.size, sha256: file.digest() }
    } catch (error) {
      await handle.close().catch(() => {})
      rmSync(pending, { force: true })
      throw storageError(error)
    }
  }

  place(fileIds: readonly string[]): void {
    try {
      for (const id of fileIds) renameSync(join(this.incoming, id), join(this.dir, id))
      syncDirectory(this.dir)
    } catch (error) {
      throw storageError(error)
    }
  }

  committed(): Promise<void> {
    // A placed file is tracked by its name alone.
    return Promise.resolve()
  }

  discard(fileIds: readonly string[]): Promise<void> {
    for (const id of fileIds) {
      for (const path of [join(this.incoming, id), join(this.dir, id)]) {
        try {
          rmSync(path, { force: true })
        } catch {
          // Left for the start-up sweep.
        }
      }
    }
    return Promise.resolve()
  }

  read(fileId: string, range: ByteRange | null): Promise<Blob> {
    const file = Bun.file(join(this.dir, fileId))
    return Promise.resolve(range === null ? file : file.slice(range.start, range.end + 1))
  }

  exists(fileId: string): Promise<boolean> {
    return Bun.file(join(this.dir, fileId)).exists()
  }

  check(): void {
    // Files stream into .incoming first: it must be there, a directory, and writable (root
    // passes access() on a plain file, hence the stat).
    if (!statSync(this.incoming).isDirectory())
      throw new Error(`${this.incoming} is not a directory`)
    accessSync(this.incoming, constants.W_OK)
  }

  async sweep(
    known: (fileIds: readonly string[]) => Promise<ReadonlySet<string>>,
  ): Promise<number> {
    let removed = 0
    for (const name of readdirSync(this.incoming)) {
      rmSync(join(this.incoming, name), { force: true, recursive: true })
      removed += 1
    }
    const placed = readdirSync(this.dir).filter((name) => name !== INCOMING)
    const registered = await known(placed)
    for (const name of placed) {
      if (registered.has(name)) continue
      rmSync(join(this.dir, name), { force: true, recursive: true })
      removed += 1
    }
    return removed
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
