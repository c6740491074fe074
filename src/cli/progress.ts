const REDRAW_MS = 100
const PLAIN_EVERY_MS = 5000
const BAR_WIDTH = 24

export interface ProgressOutput {
  write(text: string): unknown
  isTTY?: boolean
}

/**
 * Progress of a long command on stderr: on a terminal a bar redrawn in place at most ten times
 * a second; otherwise (a pipe, a log file) a plain line at every tenth of the work, or every
 * five seconds when the total is unknown.
 */
export class Progress {
  private bytes = 0
  private rows = 0
  private lastDraw = Number.NEGATIVE_INFINITY
  private lastPlainTenth = 0
  private readonly started = performance.now()
  private readonly tty: boolean

  constructor(
    private readonly label: string,
    private readonly totalBytes: number | null,
    private readonly out: ProgressOutput = process.stderr,
    /** What the counted things are called. */
    private readonly unit = 'rows',
  ) {
    this.tty = out.isTTY === true
  }

  advance(bytes: number, rows: number): void {
    this.bytes += bytes
    this.rows += rows
    const now = performance.now()
    if (this.tty) {
      if (now - this.lastDraw >= REDRAW_MS) this.draw(now)
      return
    }
    const fraction = this.fraction()
    if (fraction !== null) {
      const tenth = Math.floor(fraction * 10)
      if (tenth > this.lastPlainTenth && tenth < 10) {
        this.lastPlainTenth = tenth
        this.out.write(`${this.describe(now)}\n`)
      }
    } else if (now - this.lastDraw >= PLAIN_EVERY_MS) {
      this.lastDraw = now
      this.out.write(`${this.describe(now)}\n`)
    }
  }

  /** The last state, on its own line. */
  finish(): void {
    const now = performance.now()
    if (this.tty) this.draw(now, '\n')
    else this.out.write(`${this.describe(now)}\n`)
  }

  private draw(now: number, end = ''): void {
    this.lastDraw = now
    const fraction = this.fraction()
    const bar =
      fraction === null
        ? ''
        : `[${'#'.repeat(Math.round(fraction * BAR_WIDTH)).padEnd(BAR_WIDTH, '-')}] `
    this.out.write(`\r\x1b[K${bar}${this.describe(now)}${end}`)
  }

  private describe(now: number): string {
    const fraction = this.fraction()
    const seconds = Math.max((now - this.started) / 1000, 0.001)
    const percent = fraction === null ? '' : ` (${Math.floor(fraction * 100)}%)`
    return `${this.label}: ${this.rows.toLocaleString('en-US')} ${this.unit}${percent}, ${Math.round(this.rows / seconds).toLocaleString('en-US')}/s`
  }

  private fraction(): number | null {
    if (this.totalBytes === null || this.totalBytes === 0) return null
    return Math.min(1, this.bytes / this.totalBytes)
  }
}
