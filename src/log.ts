import { closeSync, openSync, writeSync } from 'node:fs'
import type { FileSink } from 'bun'

export type Fields = Record<string, unknown>

/** Diagnostics (startup, warnings, internal errors) as JSON lines on stderr. */
export interface Logger {
  info(message: string, fields?: Fields): void
  warn(message: string, fields?: Fields): void
  error(message: string, fields?: Fields): void
}

export function createLogger(write: (line: string) => void = writeToStderr): Logger {
  const emit = (level: string, message: string, fields: Fields = {}) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`)
  return {
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  }
}

/**
 * Writes a line to file descriptor 2 at once, so a line logged just before a crash is not lost
 * in a buffer. Not `process.stderr`: its first use builds Node's stream machinery, 3-5 ms of a
 * compiled roster's start-up. A pipe that would block (EAGAIN) takes the line through it.
 */
function writeToStderr(line: string): void {
  try {
    writeSync(2, line)
  } catch {
    process.stderr.write(line)
  }
}

/** A logger that keeps lines in memory, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  return Object.assign(
    createLogger((line) => lines.push(line)),
    { lines },
  )
}

/** Appends text to a file (or stdout) through a buffered sink; callers batch their writes. */
export class LineWriter {
  private readonly sink: FileSink
  private readonly fd: number | null

  /** Writes to `path` (appending) or, when it is null, to stdout. */
  constructor(path: string | null) {
    this.fd = path === null ? null : openSync(path, 'a', 0o640)
    this.sink = this.fd === null ? Bun.stdout.writer() : Bun.file(this.fd).writer()
  }

  write(text: string): void {
    this.sink.write(text)
  }

  /** Waits until everything written has reached the file or pipe, then closes it. */
  async close(): Promise<void> {
    await this.sink.flush()
    await this.sink.end()
    if (this.fd !== null) closeSync(this.fd)
  }
}
