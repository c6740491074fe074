import { Database } from 'bun:sqlite'
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join } from 'node:path'

/** The backup could not be made; the message is one line for the operator. */
export class BackupError extends Error {}

export interface BackupResult {
  bytes: number
  ms: number
}

/**
 * A consistent copy of a live database: VACUUM INTO reads one snapshot (a read transaction in
 * WAL mode, so the server keeps writing meanwhile) into a temporary file beside the target,
 * which is checked, fsynced and then linked into place. Linking refuses an existing target,
 * even one created while the copy ran, and a failed backup leaves no file behind.
 */
export function backupDatabase(dbPath: string, target: string): BackupResult {
  const started = performance.now()
  if (existsSync(target)) throw new BackupError(`${target} already exists; not overwriting it`)
  if (!existsSync(dbPath)) throw new BackupError(`there is no database at ${dbPath}`)
  try {
    // `roster backup /backups/today.db` works on a fresh machine: the folder is made, private.
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    accessSync(dirname(target), constants.W_OK)
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'error'
    if (code === 'EEXIST' || code === 'ENOTDIR') {
      throw new BackupError(`cannot write in ${dirname(target)}: it is not a folder`)
    }
    throw new BackupError(`cannot write in ${dirname(target)} (${code})`)
  }
  const temporary = join(
    dirname(target),
    `.${basename(target)}.partial-${process.pid}-${Date.now().toString(36)}`,
  )
  let source: Database | null = null
  try {
    source = new Database(dbPath, { readwrite: true, create: false, strict: true })
    source.run('PRAGMA busy_timeout = 5000')
    source.run('VACUUM INTO ?', [temporary])
    source.close()
    source = null
    checkCopy(temporary)
    // It holds password hashes: readable by the owner only, like the database should be.
    chmodSync(temporary, 0o600)
    syncFile(temporary)
    placeWithoutOverwriting(temporary, target)
    syncFile(dirname(target))
    return { bytes: statSync(target).size, ms: performance.now() - started }
  } catch (error) {
    if (error instanceof BackupError) throw error
    const { code, message } = error as { code?: string; message: string }
    throw new BackupError(`backup of ${dbPath} to ${target} failed: ${code ?? message}`)
  } finally {
    source?.close()
    rmSync(temporary, { force: true })
  }
}

/** Hard-links the copy into place; where links are not supported, copies it exclusively. */
function placeWithoutOverwriting(temporary: string, target: string): void {
  try {
    linkSync(temporary, target)
    return
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'EEXIST') throw new BackupError(`${target} already exists; not overwriting it`)
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') {
      throw error
    }
  }
  try {
    copyFileSync(temporary, target, constants.COPYFILE_EXCL)
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST') {
      throw new BackupError(`${target} already exists; not overwriting it`)
    }
    throw error
  }
  syncFile(target)
}

function checkCopy(path: string): void {
  const copy = new Database(path, { readonly: true, strict: true })
  try {
    const result = copy.query<{ quick_check: string }, []>('PRAGMA quick_check').get()
    if (result?.quick_check !== 'ok') {
      throw new BackupError(`the copy failed its check (${result?.quick_check}); nothing written`)
    }
  } finally {
    copy.close()
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
