/**
 * A small Prometheus registry: counters and gauges with fixed label names, rendered in the
 * text exposition format 0.0.4. Samples are kept in maps keyed by the joined label values, so
 * recording one costs a string join and a map lookup.
 */

type Labels<N extends string> = Record<N, string>

interface Family {
  render(): string | Promise<string>
}

/** Escapes a label value as the exposition format requires. */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

function labelText(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return ''
  return `{${names.map((name, i) => `${name}="${escapeLabel(values[i] ?? '')}"`).join(',')}}`
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`
}

/** Prometheus renders floats in Go's notation; JavaScript's is compatible for finite values. */
function number(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf'
  return String(value)
}

const SEPARATOR = '\u0000'

export class Counter<N extends string = never> implements Family {
  private readonly samples = new Map<string, { values: string[]; count: number }>()

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly N[] = [],
  ) {}

  inc(labels: Labels<N> = {} as Labels<N>, by = 1): void {
    const values = this.labelNames.map((name) => labels[name])
    const key = values.join(SEPARATOR)
    const sample = this.samples.get(key)
    if (sample === undefined) this.samples.set(key, { values, count: by })
    else sample.count += by
  }

  /** The current value for these labels (0 when never incremented). */
  get(labels: Labels<N> = {} as Labels<N>): number {
    const key = this.labelNames.map((name) => labels[name]).join(SEPARATOR)
    return this.samples.get(key)?.count ?? 0
  }

  render(): string {
    let text = header(this.name, this.help, 'counter')
    if (this.samples.size === 0 && this.labelNames.length === 0) return `${text}${this.name} 0\n`
    for (const { values, count } of this.samples.values()) {
      text += `${this.name}${labelText(this.labelNames, values)} ${number(count)}\n`
    }
    return text
  }
}

/** A value read when scraped (a row count, memory in use). */
export class Gauge implements Family {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => number | null | Promise<number | null>,
    private readonly labels: Record<string, string> = {},
  ) {}

  async render(): Promise<string> {
    const value = await this.read()
    if (value === null) return ''
    const names = Object.keys(this.labels)
    return `${header(this.name, this.help, 'gauge')}${this.name}${labelText(names, Object.values(this.labels))} ${number(value)}\n`
  }
}

/** Counters read when scraped from a source that already counts (CPU seconds). */
export class ReadCounter implements Family {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => number | null,
  ) {}

  render(): string {
    const value = this.read()
    if (value === null) return ''
    return `${header(this.name, this.help, 'counter')}${this.name} ${number(value)}\n`
  }
}

export class Registry {
  private readonly families: Family[] = []

  add<F extends Family>(family: F): F {
    this.families.push(family)
    return family
  }

  async render(): Promise<string> {
    return (await Promise.all(this.families.map((family) => family.render()))).join('')
  }
}
